package ui

import (
	"os"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/trochilus-llm/trochilus/engine/library"
)

// The Appearance setting fixes the app's theme variant (System gives the system's theme back)
// and is remembered: a window opened later starts with it.
func TestThemeSetting(t *testing.T) {
	a := test.NewTempApp(t)
	system := theme.DefaultTheme()
	a.Settings().SetTheme(system)
	dirs := library.DirsAt(t.TempDir())
	for _, d := range []string{dirs.Models, dirs.Chats} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u := startUI(t, &fakeBackend{prof: bigMachine()}, dirs, Options{})
	if u.mach.theme.Selected != themeSystem || a.Settings().Theme() != system || u.themeVariant() != a.Settings().ThemeVariant() {
		t.Fatalf("at start: %q, theme %T", u.mach.theme.Selected, a.Settings().Theme())
	}
	bg := func() any { return a.Settings().Theme().Color(theme.ColorNameBackground, theme.VariantLight) }
	dark, light := system.Color(theme.ColorNameBackground, theme.VariantDark), system.Color(theme.ColorNameBackground, theme.VariantLight)
	if dark == light {
		t.Fatal("the default theme's variants have one background")
	}
	for _, c := range []struct {
		choice  string
		variant fyne.ThemeVariant
		bg      any
	}{{themeDark, theme.VariantDark, dark}, {themeLight, theme.VariantLight, light}} {
		u.mach.theme.SetSelected(c.choice)
		if u.themeVariant() != c.variant || bg() != c.bg {
			t.Fatalf("%s: variant %v, background %v, want %v", c.choice, u.themeVariant(), bg(), c.bg)
		}
		if got := a.Preferences().String(prefTheme); got != c.choice {
			t.Fatalf("%s: remembered %q", c.choice, got)
		}
	}

	// A later start (the system's theme again until the window applies the setting) is Light.
	u.Close()
	a.Settings().SetTheme(system)
	u2 := startUI(t, &fakeBackend{prof: bigMachine()}, dirs, Options{})
	if u2.mach.theme.Selected != themeLight || u2.themeVariant() != theme.VariantLight || bg() != light {
		t.Fatalf("restarted: %q, variant %v", u2.mach.theme.Selected, u2.themeVariant())
	}
	u2.mach.theme.SetSelected(themeSystem)
	if a.Settings().Theme() != system || a.Preferences().String(prefTheme) != themeSystem {
		t.Fatalf("System: theme %T, remembered %q", a.Settings().Theme(), a.Preferences().String(prefTheme))
	}
}
