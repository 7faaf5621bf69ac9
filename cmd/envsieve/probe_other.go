//go:build !unix

package main

// startThrough needs descriptors passed over a unix socket: unix only.
func startThrough(sock, path string, argv []string) []byte { return nil }
