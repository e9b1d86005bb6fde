// Package gpu drives an NVIDIA GPU through the CUDA driver library (libcuda.so.1, nvcuda.dll)
// loaded at run time with purego: no CUDA toolkit at build time and no cgo. Kernels are PTX
// text this package writes, compiled by the driver when loaded.
//
// Every kernel computes the bits the CPU definition in package kernels computes: float
// operations are PTX's .rn adds and multiplies, which the compiler never contracts into
// fused multiply-adds, subnormals are kept (no .ftz), and each reduction follows the
// contract's order (sixteen lanes, element k in lane k mod 16, the fixed tree).
package gpu
