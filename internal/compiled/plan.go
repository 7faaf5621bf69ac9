package compiled

import (
	"math/bits"
	"slices"
)

// Admit says how a name was admitted without a wildcard.
type Admit struct {
	Source *Source
	// Exact is true when an allow entry names the key exactly: the only way a
	// sensitive key passes the guard.
	Exact bool
	// Curated is true for base and group keys: they pass the name test, not
	// the value test.
	Curated bool
}

// Tables are a level's or an effective policy's allow and deny entries, compiled for
// lookup: exact names in maps, the rest as globs. Tables are immutable.
type Tables struct {
	// admit and deny collect the exact names while a policy is built;
	// freeze turns them into names, the table every lookup reads.
	admit      map[string]Admit
	allowGlobs []Entry
	deny       map[string]*Source
	denyGlobs  []Entry
	// allowFirst and denyFirst hold the bytes a name must start with for
	// any glob of the list to match, so most names skip the globs.
	allowFirst, denyFirst firstBytes
	anyFirst              firstBytes // allowFirst and denyFirst: may any glob match
	names                 nameTable  // admit and deny, frozen for Lookup
	// filter has the bit HashName(name)&filterMask set for each name of
	// names: with 64 bits per name, MayMatch rules out all but a few
	// percent of the names that are not there in one look-up.
	filter     []uint64
	filterMask uint32
}

// firstBytes is a set of bytes, one bool per byte so that a test is one
// load.
type firstBytes [256]bool

func (f *firstBytes) addGlob(g string) {
	if g[0] == '*' || g[0] == '?' {
		for i := range f {
			f[i] = true
		}
		return
	}
	f[g[0]] = true
}

func (f *firstBytes) has(c byte) bool { return f[c] }

// NewRuleTables compiles a rule's level into its tables, the groups read
// from c. For the policy package's builder.
func NewRuleTables(l *Level, c *Catalog) *Tables {
	t := newTablesSized(0, 0)
	t.addLevel(l, c)
	t.freeze()
	return t
}

// newTablesSized returns tables whose maps have room for about admits and
// denies exact names, so that filling them does not grow them.
func newTablesSized(admits, denies int) *Tables {
	return &Tables{admit: make(map[string]Admit, admits), deny: make(map[string]*Source, denies)}
}

// HashName is the hash the tables are keyed by: a caller that already
// hashed a name, while checking it with [HashEntry], looks it up without
// hashing it again. It mixes the name 8 bytes at a time, the last word
// padded with zeros, and its length.
func HashName(name string) uint32 {
	x := uint64(hashK0)
	s := name
	for ; len(s) >= 8; s = s[8:] {
		x = hashMix(x, le64(s))
	}
	if len(s) > 0 {
		x = hashMix(x, leTail(s, 0))
	}
	return hashFinish(x, len(name))
}

// HashEntry reads a "KEY=value" entry of an environment up to its first
// '=', at eq (-1 when there is none), and returns HashName of the key and
// whether the key is a valid variable name (ValidName), in one pass over
// the key, 8 bytes at a time. h is only meaningful for a valid key.
func HashEntry(kv string) (h uint32, eq int, valid bool) {
	x := uint64(hashK0)
	n := len(kv)
	i := 0
	var w, bad uint64
	for ; i+8 <= n; i += 8 {
		w = le64(kv[i : i+8])
		if bad = notNameBytes(w); bad != 0 {
			break
		}
		x = hashMix(x, w)
	}
	if bad == 0 { // fewer than 8 bytes are left
		switch {
		case i == n:
			return 0, -1, false
		case n >= 8: // the last 8 bytes, shifted past those before i
			w = le64(kv[n-8:]) >> (8 * (i + 8 - n))
		default:
			w = leTail(kv, i)
		}
		bad = notNameBytes(w)
	}
	// The first byte that is not a name byte ends a valid key if it is the
	// '='. A padding byte is zero: neither.
	k := bits.TrailingZeros64(bad) / 8
	if i+k >= n || kv[i+k] != '=' {
		return 0, indexEq(kv, i+k), false
	}
	if k > 0 {
		x = hashMix(x, w&(1<<(8*k)-1))
	}
	eq = i + k
	return hashFinish(x, eq), eq, eq > 0 && (kv[0] < '0' || kv[0] > '9')
}

// indexEq returns the index of the first '=' of kv at or after i, or -1.
func indexEq(kv string, i int) int {
	for ; i < len(kv); i++ {
		if kv[i] == '=' {
			return i
		}
	}
	return -1
}

const (
	hashK0 = 0x9e3779b97f4a7c15
	hashK1 = 0xbf58476d1ce4e5b9
	hashK2 = 0x94d049bb133111eb
)

func hashMix(x, w uint64) uint64 { return bits.RotateLeft64((x^w)*hashK1, 31) }

func hashFinish(x uint64, n int) uint32 {
	x ^= uint64(n)
	x ^= x >> 32
	x *= hashK2
	x ^= x >> 29
	return uint32(x)
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// leTail returns s[i:], fewer than 8 bytes, as a little-endian word padded
// with zeros.
func leTail(s string, i int) uint64 {
	if len(s) >= 8 { // the last 8 bytes, shifted past those before i
		return le64(s[len(s)-8:]) >> (8 * (8 - (len(s) - i)))
	}
	var w uint64
	for j := len(s) - 1; j >= i; j-- {
		w = w<<8 | uint64(s[j])
	}
	return w
}

// notNameBytes returns, in the high bit of each byte, whether that byte of
// w is not a name byte ([A-Za-z0-9_]), testing the 8 bytes at once. For a
// byte below 0x80, adding 0x80-lo sets its high bit when it is at least lo,
// adding 0x7f-hi when it is above hi, and neither sum carries into the next
// byte; a byte of 0x80 or more is not a name byte anyway.
func notNameBytes(w uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	f := w | 0x20*ones // upper-case letters to lower case
	ok := (f+(0x80-'a')*ones)&^(f+(0x7f-'z')*ones) |
		(w+(0x80-'0')*ones)&^(w+(0x7f-'9')*ones) |
		(w+(0x80-'_')*ones)&^(w+(0x7f-'_')*ones)
	return (^ok | w) & high
}

// nameTable is an immutable open-addressing table from exact names to what
// admits and denies them, keyed by HashName.
type nameTable struct {
	slots   []int32 // 0 empty, else 1 + index into entries
	entries []nameEntry
	mask    uint32
}

type nameEntry struct {
	name     string
	hash     uint32
	admit    Admit
	admitted bool
	deny     *Source
}

func (t *nameTable) lookup(h uint32, name string) *nameEntry {
	if len(t.slots) == 0 {
		return nil
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return nil
		}
		if e := &t.entries[s-1]; e.hash == h && e.name == name {
			return e
		}
	}
}

// freeze builds the table from the admit and deny maps.
func (t *Tables) freeze() {
	n := len(t.admit)
	for k := range t.deny {
		if _, ok := t.admit[k]; !ok {
			n++
		}
	}
	size := 8
	for size < 2*n {
		size <<= 1
	}
	nt := nameTable{slots: make([]int32, size), mask: uint32(size - 1), entries: make([]nameEntry, 0, n)}
	add := func(e nameEntry) {
		e.hash = HashName(e.name)
		nt.entries = append(nt.entries, e)
		i := e.hash & nt.mask
		for nt.slots[i] != 0 {
			i = (i + 1) & nt.mask
		}
		nt.slots[i] = int32(len(nt.entries))
	}
	for k, a := range t.admit {
		add(nameEntry{name: k, admit: a, admitted: true, deny: t.deny[k]})
	}
	for k, d := range t.deny {
		if _, ok := t.admit[k]; !ok {
			add(nameEntry{name: k, deny: d})
		}
	}
	t.names = nt
	bits := 64
	for bits < 64*len(nt.entries) {
		bits <<= 1
	}
	t.filter, t.filterMask = make([]uint64, bits/64), uint32(bits-1)
	for _, e := range nt.entries {
		i := e.hash & t.filterMask
		t.filter[i>>6] |= 1 << (i & 63)
	}
}

// MayMatch reports whether Lookup can find anything for key: false means
// that no exact name can be key and no glob can match it, which is the
// answer for most keys of an environment. It is cheap enough to be inlined
// into a caller's loop. h is HashName(key).
func (t *Tables) MayMatch(h uint32, key string) bool {
	return t.inFilter(h) || key != "" && t.anyFirst.has(key[0])
}

// inFilter reports whether an exact name may have the hash h.
func (t *Tables) inFilter(h uint32) bool {
	f, i := t.filter, h&t.filterMask
	w := int(i >> 6)
	return w < len(f) && f[w]&(1<<(i&63)) != 0
}

// Lookup returns how a key is admitted and what denies it, in one probe of
// the exact names and, when needed, a scan of the globs. h is HashName(key).
func (t *Tables) Lookup(h uint32, key string) (a Admit, admitted bool, deny *Source) {
	if t.inFilter(h) {
		if e := t.names.lookup(h, key); e != nil {
			a, admitted, deny = e.admit, e.admitted, e.deny
		}
	}
	if key == "" {
		return a, admitted, deny
	}
	if !admitted && len(t.allowGlobs) > 0 && t.allowFirst.has(key[0]) {
		for _, g := range t.allowGlobs {
			if g.Glob.Match(key) {
				a, admitted = Admit{Source: g.Source}, true
				break
			}
		}
	}
	if deny == nil && len(t.denyGlobs) > 0 && t.denyFirst.has(key[0]) {
		for _, g := range t.denyGlobs {
			if g.Glob.Match(key) {
				deny = g.Source
				break
			}
		}
	}
	return a, admitted, deny
}

// Admit returns how key is admitted: by exact name (an allow entry or a
// curated base or group key) first, then by the first matching glob. It is
// Lookup without a precomputed hash.
func (t *Tables) Admit(key string) (a Admit, ok bool) {
	a, ok, _ = t.Lookup(HashName(key), key)
	return a, ok
}

// Deny returns the first deny entry that removes key: an exact name first,
// then the first matching glob.
func (t *Tables) Deny(key string) (*Source, bool) {
	_, _, d := t.Lookup(HashName(key), key)
	return d, d != nil
}

// addAdmit records an exact admission, keeping the strongest: an exact allow
// beats a curated key, and an earlier level beats a later one.
func (t *Tables) addAdmit(key string, a Admit) {
	old, ok := t.admit[key]
	if ok && (old.Exact || !a.Exact) {
		return
	}
	t.admit[key] = a
}

func (t *Tables) addLevel(l *Level, c *Catalog) {
	for _, g := range l.Groups {
		for _, k := range c.Groups[g.Entry].Keys {
			t.addAdmit(k, Admit{Source: g, Curated: true})
		}
	}
	for _, e := range l.Allow {
		if lit, ok := e.Glob.Literal(); ok {
			t.addAdmit(lit, Admit{Source: e.Source, Exact: true})
		} else {
			t.allowGlobs = append(t.allowGlobs, e)
			t.allowFirst.addGlob(e.Glob.String())
			t.anyFirst.addGlob(e.Glob.String())
		}
	}
	t.addDeny(l)
}

func (t *Tables) addDeny(l *Level) {
	for _, e := range l.Deny {
		if lit, ok := e.Glob.Literal(); ok {
			if _, dup := t.deny[lit]; !dup {
				t.deny[lit] = e.Source
			}
		} else {
			t.denyGlobs = append(t.denyGlobs, e)
			t.denyFirst.addGlob(e.Glob.String())
			t.anyFirst.addGlob(e.Glob.String())
		}
	}
}

// Effective is a profile's effective policy: the merged view of the
// global level, the profile's levels and the project-local level, what
// the engine needs before a rule is chosen. (A launch's built plan is
// launch.Plan; this is never called a plan.)
type Effective struct {
	Profile string // "" when no profile was asked for
	Levels  []*Level
	Tables
	Base       Base
	BaseSource *Source
	// Set holds the merged literal values, one per key, the later level's
	// value winning, in the order the keys were first written.
	Set          []Setting
	Limits       Limits
	LimitSources map[string]*Source // by limit name, nil for a default
	Mode         Mode
	ModeSource   *Source
	// BlockIteration turns on the shim's hiding of Hide and of the
	// sensitive keys admitted by exact name; BlockSource says who said so.
	BlockIteration bool
	BlockSource    *Source
	// Seal is the levels' seal mode, the later level's word; a local
	// policy can only raise it. SealSource says who said so.
	Seal       SealMode
	SealSource *Source
	// SealMask is the union of the levels' seal masks ("~/" paths not
	// yet expanded): a local policy can only add to it.
	SealMask []string
	// SealWrite is the union of the levels' seal write places; a local
	// policy cannot add to it (policy.Narrow refuses one that tries).
	SealWrite []string
	// Hide is the union of the levels' hide lists.
	Hide []string
	// Brokered is the union of the levels' brokered lists.
	Brokered []string
	// ShellEnvPassthrough and ClientEnv shape daemon sessions: the
	// daemon's own variables taken into layer 1, and the treatment of the
	// client's snapshot (ClientFiltered unless a profile says otherwise).
	ShellEnvPassthrough []string
	ClientEnv           ClientEnv
	// StateDirs is the union of the profiles' state_dirs: what a launch
	// sealed with Landlock makes before the tree starts, which could not
	// make a new directory in HOME (package seal).
	StateDirs []string
	// exactAllow and groups record what the effective policy admits, for the
	// narrowing checks of sub-agent profiles.
	groups map[string]bool
}

// addPaths adds the paths of add not yet in list.
func addPaths(list, add []string) []string {
	for _, p := range add {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	return list
}

// Merge merges the global level, a profile's levels (levels, the global
// level first) and the project-local level (nil for none) into the
// profile's effective policy, the bases and groups read from c. For the policy package's builder.
func Merge(profile string, levels []*Level, local *Level, c *Catalog) *Effective {
	// How many exact names the tables will hold, about: the widest base's
	// keys, and the levels' groups and entries.
	admits, denies := 0, 0
	if b := c.Bases[DefaultBase]; b != nil {
		admits += len(b.Keys)
		for _, g := range b.Groups {
			admits += len(c.Groups[g].Keys)
		}
	}
	for _, l := range levels {
		for _, g := range l.Groups {
			admits += len(c.Groups[g.Entry].Keys)
		}
		admits += len(l.Allow)
		denies += len(l.Deny)
	}
	if local != nil {
		denies += len(local.Deny)
	}
	p := &Effective{Profile: profile, Levels: levels, Tables: *newTablesSized(admits, denies), Mode: Enforce, Seal: SealOff,
		Limits: DefaultLimits, LimitSources: map[string]*Source{}, groups: map[string]bool{}, ClientEnv: ClientFiltered,
		Base: DefaultBase, BaseSource: &Source{Level: "global", List: "base", Entry: string(DefaultBase), Pos: Pos{File: "default"}}}
	for _, l := range levels {
		if l.Base != nil {
			p.Base, p.BaseSource = *l.Base, l.BaseSource
		}
		if l.Mode != nil {
			p.Mode, p.ModeSource = *l.Mode, l.modeSource()
		}
		if l.BlockIteration != nil {
			p.BlockIteration, p.BlockSource = *l.BlockIteration, l.BlockSource
		}
		if l.Seal != nil {
			p.Seal, p.SealSource = *l.Seal, l.SealSource
		}
		if l.ClientEnv != nil {
			p.ClientEnv = *l.ClientEnv
		}
		p.Hide = addNames(p.Hide, l.Hide)
		p.Brokered = addNames(p.Brokered, l.Brokered)
		p.ShellEnvPassthrough = addNames(p.ShellEnvPassthrough, l.Passthrough)
		for _, d := range l.StateDirs {
			if !slices.Contains(p.StateDirs, d) {
				p.StateDirs = append(p.StateDirs, d)
			}
		}
		p.SealMask = addPaths(p.SealMask, l.SealMask)
		p.SealWrite = addPaths(p.SealWrite, l.SealWrite)
		p.applyLimits(l, false)
	}
	if local != nil {
		if local.BlockIteration != nil && *local.BlockIteration {
			p.BlockIteration, p.BlockSource = true, local.BlockSource
		}
		if local.Seal != nil && SealRank[*local.Seal] > SealRank[p.Seal] {
			p.Seal, p.SealSource = *local.Seal, local.SealSource
		}
		p.SealMask = addPaths(p.SealMask, local.SealMask)
		p.Hide = addNames(p.Hide, local.Hide)
		p.Brokered = addNames(p.Brokered, local.Brokered)
		if local.Base != nil && BaseRank[*local.Base] < BaseRank[p.Base] {
			p.Base, p.BaseSource = *local.Base, local.BaseSource
		}
		p.applyLimits(local, true)
	}
	if b := c.Bases[p.Base]; b != nil {
		for _, k := range c.AllKeys(b) {
			p.addAdmit(k, Admit{Source: p.BaseSource, Curated: true})
		}
		for _, g := range b.Groups {
			p.groups[g] = true
		}
	}
	for _, l := range levels {
		p.addLevel(l, c)
		for _, g := range l.Groups {
			p.groups[g.Entry] = true
		}
	}
	if local != nil {
		p.addDeny(local)
	}
	p.freeze()
	idx := map[string]int{}
	for _, l := range levels {
		for _, s := range l.Set {
			if i, ok := idx[s.Key]; ok {
				p.Set[i] = s
				continue
			}
			idx[s.Key] = len(p.Set)
			p.Set = append(p.Set, s)
		}
	}
	return p
}

// addNames appends the entries of srcs that names lacks.
func addNames(names []string, srcs []*Source) []string {
	for _, s := range srcs {
		if !slices.Contains(names, s.Entry) {
			names = append(names, s.Entry)
		}
	}
	return names
}

// applyLimits overrides the effective policy's limits with the level's; a narrowing
// level only ever lowers them.
func (p *Effective) applyLimits(l *Level, narrow bool) {
	set := func(name string, v *int, dst *int) {
		if v == nil || (narrow && *v >= *dst) {
			return
		}
		*dst = *v
		p.LimitSources[name] = l.limitSources[name]
	}
	set("max_keys", l.MaxKeys, &p.Limits.MaxKeys)
	set("max_bytes", l.MaxBytes, &p.Limits.MaxBytes)
	set("max_value_bytes", l.MaxValueBytes, &p.Limits.MaxValueBytes)
}

func (l *Level) modeSource() *Source {
	return &Source{Level: l.Name, List: "mode", Entry: string(*l.Mode), Pos: l.modePos}
}

// Escalations calls esc for everything in level l that parent does not
// already grant: what makes l more than a narrowing of parent.
func Escalations(l *Level, parent *Effective, esc func(pos Pos, format string, args ...any)) {
	if l.Base != nil && BaseRank[*l.Base] > BaseRank[parent.Base] {
		esc(l.BaseSource.Pos, "base %s is wider than the parent's base %s", *l.Base, parent.Base)
	}
	if l.Mode != nil && *l.Mode == Audit && parent.Mode != Audit {
		esc(l.modeSource().Pos, "mode audit widens the parent's enforce")
	}
	if l.BlockIteration != nil && !*l.BlockIteration && parent.BlockIteration {
		esc(l.BlockSource.Pos, "block_iteration false widens the parent's true")
	}
	if l.Seal != nil && SealRank[*l.Seal] < SealRank[parent.Seal] {
		esc(l.SealSource.Pos, "seal %s widens the parent's %s", *l.Seal, parent.Seal)
	}
	if l.ClientEnv != nil && *l.ClientEnv == ClientFull && parent.ClientEnv != ClientFull {
		esc(l.clientEnvPos, "client_env full widens the parent's %s", parent.ClientEnv)
	}
	for _, s := range l.Passthrough {
		if !slices.Contains(parent.ShellEnvPassthrough, s.Entry) {
			esc(s.Pos, "shell_env_passthrough %s is not passed through by the parent", s.Entry)
		}
	}
	for _, g := range l.Groups {
		if !parent.groups[g.Entry] {
			esc(g.Pos, "group %s is not granted by the parent", g.Entry)
		}
	}
	for _, e := range l.Allow {
		lit, isLit := e.Glob.Literal()
		ok := false
		if isLit {
			a, found := parent.admit[lit]
			ok = found && a.Exact
		} else {
			for _, pe := range parent.allowGlobs {
				ok = ok || pe.Glob.String() == e.Glob.String()
			}
		}
		if !ok {
			esc(e.Source.Pos, "allow %q is not granted by the parent", e.Source.Entry)
		}
	}
	parentSets := map[string]bool{}
	for _, s := range parent.Set {
		parentSets[s.Key] = true
	}
	for _, s := range l.Set {
		if !parentSets[s.Key] {
			esc(s.Source.Pos, "set %s adds a variable the parent does not set", s.Key)
		}
	}
	check := func(key string, v *int, max int) {
		if v != nil && *v > max {
			esc(l.limitSources[key].Pos, "limits: %s %d is above the parent's %d", key, *v, max)
		}
	}
	check("max_keys", l.MaxKeys, parent.Limits.MaxKeys)
	check("max_bytes", l.MaxBytes, parent.Limits.MaxBytes)
	check("max_value_bytes", l.MaxValueBytes, parent.Limits.MaxValueBytes)
}
