package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// simulator runs the subset of PTX this package writes, one thread at a time, so that the
// kernels' arithmetic and order are tested on every machine; the driver's acceptance of the
// text is tested where a GPU is (TestAttentionOnDevice). Memory is one byte slice; device
// addresses are offsets into it plus a base, so a null or stray address faults the test.
type simulator struct {
	t      *testing.T
	mem    []byte
	params map[string]uint64
	entry  []string          // the kernel's instructions
	labels map[string]int    // label → index into entry
	regs   map[string]uint64 // every register as raw bits
	block  uint32
}

const simBase = 1 << 20

// kernel extracts entry name's instructions from the module text.
func simKernel(t *testing.T, module, name string) (lines []string, params []string) {
	t.Helper()
	start := strings.Index(module, ".entry "+name+"(")
	if start < 0 {
		t.Fatalf("no entry %s", name)
	}
	body := module[start:]
	sig := body[:strings.Index(body, ")")]
	for _, p := range strings.Split(sig[strings.Index(sig, "(")+1:], ",") {
		f := strings.Fields(p)
		params = append(params, f[len(f)-1])
	}
	body = body[strings.Index(body, "{")+1 : strings.Index(body, "\n}")]
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, ".reg") {
			lines = append(lines, l)
		}
	}
	return lines, params
}

func (s *simulator) addr(a uint64, n int) []byte {
	if a < simBase || a-simBase+uint64(n) > uint64(len(s.mem)) {
		s.t.Fatalf("PTX touches address %#x outside the simulated memory", a)
	}
	return s.mem[a-simBase : a-simBase+uint64(n)]
}

func (s *simulator) val(op string) uint64 {
	switch {
	case strings.HasPrefix(op, "%"):
		v, ok := s.regs[op]
		if !ok {
			s.t.Fatalf("register %s read before written", op)
		}
		return v
	case strings.HasPrefix(op, "0f"):
		v, err := strconv.ParseUint(op[2:], 16, 32)
		if err != nil {
			s.t.Fatal(err)
		}
		return v
	}
	v, err := strconv.ParseInt(op, 0, 64)
	if err != nil {
		s.t.Fatalf("operand %q: %v", op, err)
	}
	return uint64(v)
}

func f32(b uint64) float32  { return math.Float32frombits(uint32(b)) }
func bits(f float32) uint64 { return uint64(math.Float32bits(f)) }

// run executes one thread.
func (s *simulator) run(ctaid, tid uint32) {
	s.regs = map[string]uint64{"%ctaid.x": uint64(ctaid), "%ntid.x": uint64(s.block), "%tid.x": uint64(tid)}
	for pc, steps := 0, 0; pc < len(s.entry); steps++ {
		if steps > 1e7 {
			s.t.Fatal("PTX thread does not end")
		}
		line := s.entry[pc]
		pc++
		if strings.HasSuffix(line, ":") {
			continue
		}
		line = strings.TrimSuffix(line, ";")
		if strings.HasPrefix(line, "@") {
			pred, rest, _ := strings.Cut(line[1:], " ")
			if s.val(pred) == 0 {
				continue
			}
			line = rest
		}
		op, args, _ := strings.Cut(line, " ")
		var a []string
		for _, x := range strings.Split(args, ",") {
			if x = strings.TrimSpace(x); x != "" {
				a = append(a, x)
			}
		}
		mem := func(x string) uint64 { // [reg] or [param]
			x = strings.Trim(x, "[]")
			if v, ok := s.params[x]; ok {
				return v
			}
			return s.val(x)
		}
		switch op {
		case "ret":
			return
		case "bra":
			pc = s.labels[a[0]]
		case "mov.u32", "mov.f32":
			s.regs[a[0]] = s.val(a[1]) & 0xffffffff
		case "mad.lo.u32":
			s.regs[a[0]] = (s.val(a[1])*s.val(a[2]) + s.val(a[3])) & 0xffffffff
		case "ld.param.u32", "ld.param.f32":
			s.regs[a[0]] = mem(a[1]) & 0xffffffff
		case "ld.param.u64":
			s.regs[a[0]] = mem(a[1])
		case "cvta.to.global.u64":
			s.regs[a[0]] = s.val(a[1])
		case "setp.ge.u32", "setp.le.u32":
			x, y := uint32(s.val(a[1])), uint32(s.val(a[2]))
			r := x >= y
			if op == "setp.le.u32" {
				r = x <= y
			}
			s.regs[a[0]] = 0
			if r {
				s.regs[a[0]] = 1
			}
		case "mul.wide.u32":
			s.regs[a[0]] = uint64(uint32(s.val(a[1]))) * uint64(uint32(s.val(a[2])))
		case "shl.b64":
			s.regs[a[0]] = s.val(a[1]) << s.val(a[2])
		case "add.s64":
			s.regs[a[0]] = s.val(a[1]) + s.val(a[2])
		case "and.b32":
			s.regs[a[0]] = (s.val(a[1]) & s.val(a[2])) & 0xffffffff
		case "add.u32":
			s.regs[a[0]] = (s.val(a[1]) + s.val(a[2])) & 0xffffffff
		case "sub.u32":
			s.regs[a[0]] = (s.val(a[1]) - s.val(a[2])) & 0xffffffff
		case "ld.global.f32":
			s.regs[a[0]] = uint64(binary.LittleEndian.Uint32(s.addr(mem(a[1]), 4)))
		case "st.global.f32":
			binary.LittleEndian.PutUint32(s.addr(mem(a[0]), 4), uint32(s.val(a[1])))
		case "mul.rn.f32": // Go's float32 product rounds once, as .rn does
			s.regs[a[0]] = bits(f32(s.val(a[1])) * f32(s.val(a[2])))
		case "add.rn.f32":
			s.regs[a[0]] = bits(f32(s.val(a[1])) + f32(s.val(a[2])))
		default:
			s.t.Fatalf("the simulator does not know %q", line)
		}
	}
}

// simDevice is simulated device memory with buffers handed out in order.
type simDevice struct {
	mem  []byte
	next uint64
}

func (d *simDevice) put(v []float32) uint64 {
	a := d.alloc(len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(d.mem[a-simBase+uint64(4*i):], math.Float32bits(x))
	}
	return a
}

func (d *simDevice) alloc(n int) uint64 {
	a := simBase + d.next
	d.next += uint64(4*n+255) &^ 255
	if d.next > uint64(len(d.mem)) {
		panic(fmt.Sprintf("simulated memory of %d bytes full", len(d.mem)))
	}
	return a
}

func (d *simDevice) get(a uint64, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.mem[a-simBase+uint64(4*i):]))
	}
	return v
}

// simLaunch runs kernel name of the module over grid×threadsPerBlock threads.
func simLaunch(t *testing.T, d *simDevice, module, name string, grid uint32, args ...uint64) {
	t.Helper()
	lines, params := simKernel(t, module, name)
	if len(params) != len(args) {
		t.Fatalf("%s takes %d parameters, given %d", name, len(params), len(args))
	}
	s := &simulator{t: t, mem: d.mem, params: map[string]uint64{}, labels: map[string]int{}, block: threadsPerBlock}
	for i, p := range params {
		s.params[p] = args[i]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, ":") {
			s.labels[strings.TrimSuffix(l, ":")] = i
		}
	}
	s.entry = lines
	for b := range grid {
		for th := range uint32(threadsPerBlock) {
			s.run(b, th)
		}
	}
}
