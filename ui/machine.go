package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// machineScreen shows what was measured at start and the plan for the selected model.
type machineScreen struct {
	u       *UI
	content fyne.CanvasObject
	form    *widget.Form
	values  map[string]*widget.Label
	plan    *widget.Label
	again   *widget.Button
	server  *serverPanel
	theme   *keySelect // the appearance: System, Light or Dark
}

func newMachineScreen(u *UI) *machineScreen {
	s := &machineScreen{u: u, form: widget.NewForm(), values: map[string]*widget.Label{}}
	for _, name := range []string{"Processor", "Cores", "SIMD", "Kernels", "Threads", "RAM", "Reserve", "Models disk", "GPU"} {
		l := widget.NewLabel("")
		l.Wrapping = fyne.TextWrapWord
		s.values[name] = l
		s.form.Append(name, l)
	}
	s.plan = widget.NewLabel("")
	s.plan.Wrapping = fyne.TextWrapWord
	s.again = widget.NewButton("Measure again", u.measure)
	planHead := widget.NewLabelWithStyle("Plan for the selected model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.server = newServerPanel(u)
	s.theme = newKeySelect(u.keys, []string{themeSystem, themeLight, themeDark}, u.setTheme)
	s.theme.Selected = u.themeChoice() // shown, not applied again: New applied it
	look := widget.NewForm(widget.NewFormItem("Appearance", container.NewHBox(s.theme)))
	s.content = container.NewVScroll(container.NewVBox(s.form, container.NewHBox(s.again), widget.NewSeparator(), planHead, s.plan,
		widget.NewSeparator(), s.server.obj, widget.NewSeparator(), look))
	return s
}

// measuring shows that a measurement runs.
func (s *machineScreen) measuring() {
	for _, l := range s.values {
		if l.Text == "" {
			l.SetText("measuring…")
		}
	}
	s.again.Disable()
}

// refresh shows the last measurement and the plan for the selected (or loaded) model.
func (s *machineScreen) refresh() {
	s.again.Enable()
	s.server.show()
	r := s.u.machine
	if r == nil {
		if err := s.u.machineErr; err != nil {
			for _, l := range s.values {
				l.SetText("")
			}
			s.values["Processor"].SetText("Measuring the machine failed: " + err.Error())
		}
		s.plan.SetText("The machine is not measured yet.")
		return
	}
	p := r.Profile
	cpu := p.CPU
	if cpu == "" {
		cpu = "unknown"
	}
	if p.Hypervisor != "" {
		cpu += " (virtual machine: " + p.Hypervisor + ")"
	}
	simd := strings.Join(p.Features.Names(), " ")
	if simd == "" {
		simd = "none of interest (scalar kernels)"
	}
	disk := r.Disk.String()
	if r.DiskErr != nil {
		disk = "not measured: " + r.DiskErr.Error()
	}
	set := map[string]string{
		"Processor":   fmt.Sprintf("%s, %s/%s", cpu, p.OS, p.Arch),
		"Cores":       fmt.Sprintf("%d physical, %d logical (%d usable by this process)", p.PhysicalCores, p.LogicalCores, p.UsableCPUs),
		"SIMD":        simd,
		"Kernels":     kernelsText(r.Kernels),
		"Threads":     fmt.Sprintf("%d worker threads per model", r.Threads),
		"RAM":         fmt.Sprintf("%s total, %s available", units.Bytes(p.RAMTotal), units.Bytes(p.RAMAvailable)),
		"Reserve":     fmt.Sprintf("%s %s", units.Bytes(p.Reserve()), machine.ReserveRule(p.RAMCgroup)),
		"Models disk": fmt.Sprintf("%s (%s)", disk, s.u.dirs.Models),
		"GPU":         r.GPU,
	}
	for name, text := range set {
		s.values[name].SetText(text)
	}
	s.plan.SetText(s.planText())
}

// planText describes how the selected model (else the loaded one) would use this machine.
func (s *machineScreen) planText() string {
	row := s.u.models.selectedRow()
	if row == nil {
		if i := s.u.models.index(s.u.loadedPath()); i >= 0 {
			row = &s.u.models.rows[i]
		}
	}
	if row == nil {
		return "Pick a model on the Models screen."
	}
	if row.err != nil {
		return row.path + ": " + row.err.Error()
	}
	if !row.hasPlan {
		return "Waiting for the measurement."
	}
	pl := row.plan
	lines := []string{
		row.desc.Name + " — " + pl.Placement.String(),
		pl.Text(),
		fmt.Sprintf("Dense weights %s, experts %s (%d units of %s), session %s (KV cache %s and buffers for %d positions).",
			units.Bytes(pl.Dense), units.Bytes(pl.Experts), pl.Units, units.Bytes(pl.UnitBytes),
			units.Bytes(pl.Session()), units.Bytes(pl.KV), pl.Context),
	}
	if pl.Placement == engine.ExpertsStreamed && s.u.machine != nil && s.u.machine.DiskErr == nil && s.u.machine.Disk.BytesPerSec > 0 {
		// Each token routes ExpertsUsed experts per layer; with a share of them resident, the
		// rest come from disk at the measured speed: a rough ceiling, before any caching wins.
		missing := 1 - float64(pl.UnitsInRAM)/float64(max(pl.Units, 1))
		perToken := missing * float64(row.desc.Layers*row.desc.ExpertsUsed) * float64(pl.UnitBytes)
		if perToken > 0 {
			lines = append(lines, fmt.Sprintf("At worst about %s read from disk per token (≈ %.1f tokens/s from disk alone, before the store keeps the hot experts).",
				units.Bytes(int64(perToken)), s.u.machine.Disk.BytesPerSec/perToken))
		}
	}
	return strings.Join(lines, "\n")
}

// kernelsText names the kernel tier, saying why its choice cannot change an answer.
func kernelsText(tier string) string {
	if tier == "" {
		return "unknown"
	}
	return tier + " (the fastest tier this processor runs; every tier computes the same bits)"
}
