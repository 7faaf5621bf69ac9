// Package cli holds what envsieve's programs share on the command line: the
// rules of their own output (results on stdout; errors, hints and debug
// lines on stderr, prefixed "envsieve: "), the mapping of errors to exit
// statuses, and the lookup of the policy, the install key and the secret
// store.
package cli
