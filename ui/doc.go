// Package ui holds the Fyne screens of the window app. It talks to the engine only through the engine API.
package ui
