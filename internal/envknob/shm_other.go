//go:build !unix

package envknob

const sharedMemory = ""

// sharedMemoryUsable: there is no /dev/shm here.
func sharedMemoryUsable() bool { return false }
