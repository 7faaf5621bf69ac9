// Package profiles holds envsieve's built-in data as embedded YAML: the base
// sets and groups of curated variable names (groups.yaml), the built-in agent
// profiles (builtin.yaml), the broker catalog (brokers.yaml) and the default
// policy used when no policy file is found (default.yaml). The policy package parses and validates all three with
// the same strict parser as a user's policy; this package only carries bytes.
package profiles

import _ "embed"

// Groups is groups.yaml: the bases (safe, minimal, none) and the groups.
//
//go:embed groups.yaml
var Groups []byte

// Builtin is builtin.yaml: the built-in agent profiles, in policy format.
//
//go:embed builtin.yaml
var Builtin []byte

// Brokers is brokers.yaml: the built-in broker catalog, the bindings of
// well-known HTTP credentials to their hosts and endpoints.
//
//go:embed brokers.yaml
var Brokers []byte

// Default is default.yaml: the policy used when no policy file is found.
//
//go:embed default.yaml
var Default []byte
