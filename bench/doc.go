// Package bench holds the benchmark scripts (compare.sh, shim.sh, broker.sh
// and the rest) and the small programs they build. It has no code of its
// own: its test checks that every C program the scripts compile still
// builds, with the flags its script gives, against the shim's headers of
// today, so that a change to the wire or to a header cannot leave a
// benchmark broken until somebody next runs it.
package bench
