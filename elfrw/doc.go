// Package elfrw reads and writes ELF files (ELF32/ELF64, either byte order) so that
// ftkit's tools can add sections to relocatable objects and rewrite tables in linked files
// while every byte they do not touch stays identical. Writes are atomic (WriteFileAtomic).
package elfrw
