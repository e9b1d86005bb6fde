package ui

import "testing"

// ShowScreen selects tabs by name, in any case, and names the screens when it finds none.
func TestShowScreen(t *testing.T) {
	u, _ := newTestUI(t, &fakeBackend{prof: bigMachine()}, Options{})
	for i, name := range []string{"chat", "Machine", "MODELS"} {
		if err := u.ShowScreen(name); err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 2, 0}[i]; u.tabs.SelectedIndex() != want {
			t.Fatalf("ShowScreen(%q): tab %d selected, want %d", name, u.tabs.SelectedIndex(), want)
		}
	}
	err := u.ShowScreen("settings")
	if err == nil || err.Error() != `ui: no screen "settings" (models, chat or machine)` {
		t.Fatalf("ShowScreen(settings): %v", err)
	}
	if u.tabs.SelectedIndex() != 0 {
		t.Fatalf("a failed ShowScreen changed the tab to %d", u.tabs.SelectedIndex())
	}
}
