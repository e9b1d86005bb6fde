// Package experts decides which experts of a Mixture-of-Experts model live in RAM under a budget and reads the others from disk; it changes where bytes are, never a bit of a result.
package experts
