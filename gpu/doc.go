// Package gpu drives an NVIDIA GPU through the driver library loaded at run time (no CUDA toolkit, no cgo).
package gpu
