package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// The appearance choices: the system's light or dark (Fyne's default theme follows it), or
// one of them always.
const (
	themeSystem = "System"
	themeLight  = "Light"
	themeDark   = "Dark"
)

// prefTheme is the preference the appearance choice is remembered under.
const prefTheme = "app.theme"

// variantTheme is a theme drawn in one variant whatever the system prefers: Fyne asks a theme
// for colours with the system's variant, so fixing it means answering every colour for ours.
type variantTheme struct {
	fyne.Theme
	variant fyne.ThemeVariant
}

func (t *variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.variant)
}

// themeChoice returns the remembered appearance (System until one is chosen).
func (u *UI) themeChoice() string {
	switch c := u.app.Preferences().StringWithFallback(prefTheme, themeSystem); c {
	case themeLight, themeDark:
		return c
	}
	return themeSystem
}

// setTheme applies and remembers the appearance choice.
func (u *UI) setTheme(choice string) {
	u.app.Preferences().SetString(prefTheme, choice)
	u.applyTheme(choice)
}

// applyTheme sets the app's theme for choice over the theme it has otherwise (the one the
// system, FYNE_THEME or a test chose), so that System gives exactly that one back.
func (u *UI) applyTheme(choice string) {
	s := u.app.Settings()
	cur := s.Theme()
	base := cur
	v, fixed := cur.(*variantTheme)
	if fixed {
		base = v.Theme
	}
	var want fyne.Theme
	switch choice {
	case themeLight:
		want = &variantTheme{Theme: base, variant: theme.VariantLight}
	case themeDark:
		want = &variantTheme{Theme: base, variant: theme.VariantDark}
	default:
		if !fixed {
			return // already the system's: setting it again would redraw every window for nothing
		}
		want = base
	}
	s.SetTheme(want)
}

// themeVariant returns the variant the app draws in now: the chosen one, else the system's.
func (u *UI) themeVariant() fyne.ThemeVariant {
	if v, ok := u.app.Settings().Theme().(*variantTheme); ok {
		return v.variant
	}
	return u.app.Settings().ThemeVariant()
}
