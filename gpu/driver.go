package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// result is a CUresult: 0 is success.
type result int32

// Driver is the CUDA driver API, loaded and initialized. It is safe for concurrent use.
type Driver struct {
	lib     string
	version int

	cuInit                    func(flags uint32) result
	cuDriverGetVersion        func(v *int32) result
	cuGetErrorName            func(r result, s **byte) result
	cuGetErrorString          func(r result, s **byte) result
	cuDeviceGetCount          func(n *int32) result
	cuDeviceGet               func(d *int32, ordinal int32) result
	cuDeviceGetName           func(name *byte, n int32, d int32) result
	cuDeviceTotalMem          func(bytes *uint64, d int32) result
	cuDeviceGetAttribute      func(v *int32, attr int32, d int32) result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) result
	cuDevicePrimaryCtxRelease func(d int32) result
	cuCtxSetCurrent           func(ctx uintptr) result
	cuCtxSynchronize          func() result
	cuMemGetInfo              func(free, total *uint64) result
	cuMemAlloc                func(p *uint64, bytes uintptr) result
	cuMemFree                 func(p uint64) result
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, bytes uintptr) result
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, bytes uintptr) result
	cuModuleLoadDataEx        func(m *uintptr, image *byte, n uint32, opts *int32, vals *uintptr) result
	cuModuleUnload            func(m uintptr) result
	cuModuleGetFunction       func(f *uintptr, m uintptr, name *byte) result
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) result
}

// ErrNoDriver is wrapped by Open's error when no CUDA driver library can be loaded.
var ErrNoDriver = errors.New("no CUDA driver")

// Open loads the CUDA driver library and initializes it.
func Open() (*Driver, error) {
	var lib uintptr
	var name string
	var errs []error
	for _, n := range libraryNames() {
		h, err := openLibrary(n)
		if err == nil {
			lib, name = h, n
			break
		}
		errs = append(errs, err)
	}
	if lib == 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, errs[0])
	}
	d := &Driver{lib: name}
	for _, f := range []struct {
		fptr any
		name string
	}{
		{&d.cuInit, "cuInit"},
		{&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuGetErrorName, "cuGetErrorName"},
		{&d.cuGetErrorString, "cuGetErrorString"},
		{&d.cuDeviceGetCount, "cuDeviceGetCount"},
		{&d.cuDeviceGet, "cuDeviceGet"},
		{&d.cuDeviceGetName, "cuDeviceGetName"},
		{&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&d.cuCtxSynchronize, "cuCtxSynchronize"},
		{&d.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"},
		{&d.cuMemFree, "cuMemFree_v2"},
		{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&d.cuModuleLoadDataEx, "cuModuleLoadDataEx"},
		{&d.cuModuleUnload, "cuModuleUnload"},
		{&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
	} {
		sym, err := librarySymbol(lib, f.name)
		if err != nil || sym == 0 {
			return nil, fmt.Errorf("%s: no %s: %v", name, f.name, err)
		}
		register(f.fptr, sym)
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

// Version returns the CUDA version the driver supports, as "12.4".
func (d *Driver) Version() string { return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10) }

// Library returns the name of the library loaded.
func (d *Driver) Library() string { return d.lib }

// check turns a CUresult into an error naming the call.
func (d *Driver) check(call string, r result) error {
	if r == 0 {
		return nil
	}
	var name, text *byte
	d.cuGetErrorName(r, &name)
	d.cuGetErrorString(r, &text)
	return fmt.Errorf("%s: %s (%d): %s", call, goString(name), r, goString(text))
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return "?"
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// Device describes one GPU.
type Device struct {
	Index        int
	Name         string
	Major, Minor int    // compute capability
	Memory       uint64 // bytes of device memory
	SMs          int    // streaming multiprocessors
}

func (d Device) String() string {
	return fmt.Sprintf("%s (compute %d.%d, %d SMs, %.1f GiB)", d.Name, d.Major, d.Minor, d.SMs, float64(d.Memory)/(1<<30))
}

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// Devices lists the GPUs the driver sees.
func (d *Driver) Devices() ([]Device, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	devs := make([]Device, n)
	for i := range devs {
		var h int32
		if err := d.check("cuDeviceGet", d.cuDeviceGet(&h, int32(i))); err != nil {
			return nil, err
		}
		var name [256]byte
		var mem uint64
		var major, minor, sms int32
		for _, e := range []error{
			d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), h)),
			d.check("cuDeviceTotalMem", d.cuDeviceTotalMem(&mem, h)),
			d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&major, attrComputeMajor, h)),
			d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&minor, attrComputeMinor, h)),
			d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&sms, attrMultiprocessorCount, h)),
		} {
			if e != nil {
				return nil, fmt.Errorf("device %d: %w", i, e)
			}
		}
		devs[i] = Device{Index: i, Name: goString(&name[0]), Major: int(major), Minor: int(minor), Memory: mem, SMs: int(sms)}
	}
	return devs, nil
}

// Context is a device's primary context. Each call makes it current on the calling OS
// thread (the driver keeps the current context per thread; goroutines move between threads).
type Context struct {
	d   *Driver
	dev int32
	ctx uintptr
}

// NewContext retains device index's primary context.
func (d *Driver) NewContext(index int) (*Context, error) {
	var h int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&h, int32(index))); err != nil {
		return nil, err
	}
	c := &Context{d: d, dev: h}
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c.ctx, h)); err != nil {
		return nil, err
	}
	return c, nil
}

// do runs f with the context current on a locked OS thread.
func (c *Context) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.ctx)); err != nil {
		return err
	}
	return f()
}

// Close releases the primary context.
func (c *Context) Close() error {
	return c.d.check("cuDevicePrimaryCtxRelease", c.d.cuDevicePrimaryCtxRelease(c.dev))
}

// MemInfo returns the free and total bytes of device memory.
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.do(func() error { return c.d.check("cuMemGetInfo", c.d.cuMemGetInfo(&free, &total)) })
	return free, total, err
}

// Buffer is device memory.
type Buffer struct {
	c     *Context
	ptr   uint64
	bytes int
}

// Alloc allocates bytes of device memory.
func (c *Context) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("gpu: allocating %d bytes", bytes)
	}
	b := &Buffer{c: c, bytes: bytes}
	err := c.do(func() error { return c.d.check("cuMemAlloc", c.d.cuMemAlloc(&b.ptr, uintptr(bytes))) })
	if err != nil {
		return nil, fmt.Errorf("gpu: allocating %d bytes: %w", bytes, err)
	}
	return b, nil
}

// Free releases the memory.
func (b *Buffer) Free() error {
	if b.ptr == 0 {
		return nil
	}
	err := b.c.do(func() error { return b.c.d.check("cuMemFree", b.c.d.cuMemFree(b.ptr)) })
	b.ptr = 0
	return err
}

// Len returns the buffer's size in bytes.
func (b *Buffer) Len() int { return b.bytes }

// WriteFloats copies src to the buffer, starting at float index off.
func (b *Buffer) WriteFloats(off int, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	if off < 0 || (off+len(src))*4 > b.bytes {
		return fmt.Errorf("gpu: writing %d floats at %d into a buffer of %d bytes", len(src), off, b.bytes)
	}
	return b.c.do(func() error {
		return b.c.d.check("cuMemcpyHtoD", b.c.d.cuMemcpyHtoD(b.ptr+uint64(off)*4, unsafe.Pointer(&src[0]), uintptr(len(src))*4))
	})
}

// ReadFloats copies floats from the buffer, starting at float index off, into dst.
func (b *Buffer) ReadFloats(dst []float32, off int) error {
	if len(dst) == 0 {
		return nil
	}
	if off < 0 || (off+len(dst))*4 > b.bytes {
		return fmt.Errorf("gpu: reading %d floats at %d from a buffer of %d bytes", len(dst), off, b.bytes)
	}
	return b.c.do(func() error {
		return b.c.d.check("cuMemcpyDtoH", b.c.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr+uint64(off)*4, uintptr(len(dst))*4))
	})
}

// Module is loaded PTX.
type Module struct {
	c *Context
	h uintptr
}

// JIT options (CUjit_option).
const (
	jitInfoLogBuffer       = 3
	jitInfoLogBufferBytes  = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferBytes = 6
)

// Load compiles and loads PTX text; a compile error carries the driver's log.
func (c *Context) Load(ptx string) (*Module, error) {
	m := &Module{c: c}
	src := append([]byte(ptx), 0)
	errLog := make([]byte, 16<<10)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferBytes}
	vals := []uintptr{uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog))}
	err := c.do(func() error {
		r := c.d.cuModuleLoadDataEx(&m.h, &src[0], uint32(len(opts)), &opts[0], &vals[0])
		runtime.KeepAlive(errLog)
		runtime.KeepAlive(src)
		return c.d.check("cuModuleLoadDataEx", r)
	})
	if err != nil {
		return nil, fmt.Errorf("gpu: loading PTX: %w: %s", err, goString(&errLog[0]))
	}
	return m, nil
}

// Unload frees the module.
func (m *Module) Unload() error {
	return m.c.do(func() error { return m.c.d.check("cuModuleUnload", m.c.d.cuModuleUnload(m.h)) })
}

// Function is a kernel of a module.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Function looks up the kernel name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{m: m, name: name}
	cname := append([]byte(name), 0)
	err := m.c.do(func() error {
		return m.c.d.check("cuModuleGetFunction", m.c.d.cuModuleGetFunction(&f.h, m.h, &cname[0]))
	})
	if err != nil {
		return nil, fmt.Errorf("gpu: kernel %s: %w", name, err)
	}
	return f, nil
}

// Launch runs the kernel on grid×block threads with the given parameters (each a uint64
// device address, uint32 or float32, in the kernel's order) and waits for it to finish.
func (f *Function) Launch(grid, block uint32, params ...any) error {
	vals := make([]uint64, len(params)) // one slot each, little-endian: smaller values sit at the start
	ptrs := make([]unsafe.Pointer, len(params))
	for i, p := range params {
		switch v := p.(type) {
		case uint64:
			vals[i] = v
		case *Buffer:
			vals[i] = v.ptr
		case uint32:
			vals[i] = uint64(v)
		case int:
			if v < 0 || v > 1<<32-1 {
				return fmt.Errorf("gpu: kernel %s: parameter %d = %d out of uint32", f.name, i, v)
			}
			vals[i] = uint64(v)
		case float32:
			vals[i] = uint64(*(*uint32)(unsafe.Pointer(&v)))
		default:
			return fmt.Errorf("gpu: kernel %s: parameter %d of type %T", f.name, i, p)
		}
	}
	var args *unsafe.Pointer
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(vals) > 0 {
		pin.Pin(&vals[0])
		for i := range vals {
			ptrs[i] = unsafe.Pointer(&vals[i])
		}
		pin.Pin(&ptrs[0])
		args = &ptrs[0]
	}
	c := f.m.c
	return c.do(func() error {
		if err := c.d.check("cuLaunchKernel "+f.name, c.d.cuLaunchKernel(f.h, grid, 1, 1, block, 1, 1, 0, 0, args, nil)); err != nil {
			return err
		}
		return c.d.check("cuCtxSynchronize after "+f.name, c.d.cuCtxSynchronize())
	})
}

// Probe lists the GPUs the driver sees and its CUDA version. With no driver it returns an
// error wrapping ErrNoDriver: the usual case on a machine without an NVIDIA GPU.
func Probe() ([]Device, string, error) {
	d, err := Open()
	if err != nil {
		return nil, "", err
	}
	devs, err := d.Devices()
	return devs, d.Version(), err
}
