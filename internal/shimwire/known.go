//go:build unix

package shimwire

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// KnownName is the name, in the socket's directory, of the launch's table
// of known reports: the (operation, name) pairs the launcher has had from
// some process of the tree. The shim maps it read-only (beside
// ENVSIEVE_SHIM_SOCK) and sends no report the table already holds, so that
// a process reading only names the launch knows (the usual case after the
// first few tool calls) never connects. The launcher alone writes it.
const KnownName = "k"

// knownSlots is the table's size in 64-bit keys (64 KiB); the shim's
// KNOWN_SLOTS is the same.
const knownSlots = 8192

// knownProbes is how many slots from a key's own are tried, as the shim's
// seen table does.
const knownProbes = 8

// hashFast is the shim's hash_fast: the name hashed a word at a time, each
// word read in the machine's byte order.
func hashFast(s string) uint64 {
	n := len(s)
	h := uint64(n) * 0x9E3779B97F4A7C15
	i := 0
	for ; i+8 <= n; i += 8 {
		w := binary.NativeEndian.Uint64([]byte(s[i : i+8]))
		h = (h ^ w) * 0xff51afd7ed558ccd
		h ^= h >> 32
	}
	if i < n {
		var w uint64
		if n >= 8 {
			w = binary.NativeEndian.Uint64([]byte(s[n-8:]))
		} else {
			var b [8]byte // the shim shifts the bytes in from the low end
			copy(b[:], s)
			w = binary.LittleEndian.Uint64(b[:])
		}
		h = (h ^ w) * 0xc4ceb9fe1a85ec53
		h ^= h >> 29
	}
	return h
}

// reportKey is the shim's key of a report (its claim): the name's hash
// mixed with the operation by murmur3's finaliser; never 0.
func reportKey(op byte, name string) uint64 {
	h := hashFast(name)
	h ^= uint64(op) * 0x9E3779B97F4A7C15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	if h == 0 {
		h = 1
	}
	return h
}

// knownTable is the launcher's mapping of the table.
type knownTable []byte

// mark records that the launcher has (op, name). A name the shim cut
// (over its report limit) has another key there: it stays unknown, and
// is reported again, as before. A full neighbourhood leaves it unknown too.
func (k knownTable) mark(op byte, name string) {
	if len(k) != knownSlots*8 {
		return
	}
	key := reportKey(op, name)
	i := key & (knownSlots - 1)
	for p := 0; p < knownProbes; p, i = p+1, (i+1)&(knownSlots-1) {
		slot := (*uint64)(unsafe.Pointer(&k[i*8]))
		cur := atomic.LoadUint64(slot)
		if cur == key || (cur == 0 && atomic.CompareAndSwapUint64(slot, 0, key)) {
			return
		}
		if atomic.LoadUint64(slot) == key {
			return
		}
	}
}
