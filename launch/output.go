package launch

import (
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/redact"
)

// redactionSet compiles the values to mask under the install key; nil when
// the launch does not mask or there is nothing to mask. A set the
// options' RedactCache holds for the same values is used as it is.
func (l *Plan) redactionSet() (*redact.Set, error) {
	if !l.masking() {
		return nil, nil
	}
	mask := l.maskedValues()
	if len(mask) == 0 {
		return nil, nil
	}
	c := l.opt.RedactCache
	var digest string
	if c != nil {
		digest = maskDigest(mask)
		if set := c.get(digest); set != nil {
			return set, nil
		}
	}
	key, err := l.key()
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	minLen := l.opt.Policy.Redact.MinSecretLen
	set, err := redact.Compile(key, mask, redact.Options{MinLen: minLen})
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	if skipped := set.Skipped(); len(skipped) > 0 {
		l.host.debugf("redaction: not masked, shorter than min_secret_len %d: %v", minLen, skipped)
	}
	if set.Len() == 0 {
		return nil, nil
	}
	l.host.debugf("redaction: %d values, %d patterns", len(mask)-len(set.Skipped()), set.Len())
	if c != nil && len(l.injected) == 0 {
		c.put(digest, set)
	}
	return set, nil
}

// RedactCache keeps the redaction sets the last few launches of a series
// compiled (a daemon session's commands, which mask the same values), so
// that a launch that masks the same values compiles nothing. A set that
// masks a secret the launch fetched is never kept: only values the series
// could hold anyway. The zero value is an empty cache; it is safe for
// concurrent use.
type RedactCache struct {
	mu   sync.Mutex
	sets []cachedSet
}

// cachedSet is a compiled redaction set and the digest of what it masks.
type cachedSet struct {
	digest string
	set    *redact.Set
}

// maxCachedSets bounds a RedactCache.
const maxCachedSets = 4

func (c *RedactCache) get(digest string) *redact.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sets {
		if s.digest == digest {
			return s.set
		}
	}
	return nil
}

func (c *RedactCache) put(digest string, set *redact.Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets = append(c.sets, cachedSet{digest: digest, set: set})
	if len(c.sets) > maxCachedSets {
		c.sets = slices.Delete(c.sets, 0, 1)
	}
}

// maskDigest is an exact key for a list of masked values: names and values,
// length-prefixed. It never leaves the process.
func maskDigest(hide []redact.Secret) string {
	var b []byte
	for _, h := range hide {
		b = strconv.AppendInt(b, int64(len(h.Name)), 10)
		b = append(b, ':')
		b = append(b, h.Name...)
		b = strconv.AppendInt(b, int64(len(h.Value)), 10)
		b = append(b, ':')
		b = append(b, h.Value...)
	}
	return string(b)
}

func (l *Plan) key() ([]byte, error) {
	if l.host.Key != nil {
		return l.host.Key()
	}
	if l.ownKey == nil {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("a key for this launch: %w", err)
		}
		l.ownKey = k
	}
	return l.ownKey, nil
}

// DetectorIdle is how long the output filters hold bytes that may still
// be part of a value when the child writes nothing more (a prompt, an
// echo): the unknown-secret stage's growing word, and redact.Streams'
// held tail.
const DetectorIdle = 20 * time.Millisecond

// Filter returns the writers that mask output on its way to stdout and
// stderr as the launch masks its program's (envsieve redact filters a
// stream with them): the values the launch masks, then, when the policy's
// redact.entropy is on, credential-looking strings nobody named. Nothing
// is masked when the launch does not mask. flush writes what the writers
// hold back, and must be called once they are done with.
func (l *Plan) Filter(stdout, stderr io.Writer) (o, e io.Writer, flush func() error, err error) {
	set, err := l.redactionSet()
	if err != nil {
		return nil, nil, nil, err
	}
	o, e, closers, err := l.filter(stdout, stderr, set)
	if err != nil {
		return nil, nil, nil, err
	}
	return o, e, func() error {
		var first error
		for _, c := range closers {
			if err := c(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}, nil
}

// filter returns the writers that mask a child's stdout and stderr on
// their way to stdout and stderr: the known values of set (both streams
// matched as one, held back by length and released when idle, so that
// neither a value split between them nor the timing of what is held gives
// anything away; see redact.Streams), then, when the policy's
// redact.entropy is on, credential-looking strings nobody named. A nil set
// masks no known value. The closers flush in order and must all be called.
func (l *Plan) filter(stdout, stderr io.Writer, set *redact.Set) (io.Writer, io.Writer, []func() error, error) {
	var closers []func() error
	r := l.opt.Policy.Redact
	if l.masking() && r.Entropy {
		key, err := l.key()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("redaction: %w", err)
		}
		opt := detect.ScanOptions{MinLen: r.EntropyMinLen, MinEntropy: r.EntropyThreshold}
		do := redact.NewDetector(stdout, key, opt, DetectorIdle)
		de := redact.NewDetector(stderr, key, opt, DetectorIdle)
		stdout, stderr, closers = do, de, []func() error{do.Close, de.Close}
	}
	if set != nil {
		m := redact.NewStreams(stdout, stderr, set, DetectorIdle)
		stdout, stderr, closers = m.Stdout(), m.Stderr(), append([]func() error{m.Close}, closers...)
	}
	return stdout, stderr, closers, nil
}

// maskArgs returns argv with every masked value as long as
// redact.min_secret_len or longer replaced by its token, for the audit log: a command line may hold a value the
// child was not given (typed into it, or pasted by an agent), and the log
// must not.
func (l *Plan) maskArgs(argv []string) ([]string, error) {
	mask := l.maskedValues()
	if len(mask) == 0 {
		return argv, nil
	}
	key, err := l.key()
	if err != nil {
		return nil, err
	}
	minLen := l.opt.Policy.Redact.MinSecretLen
	out := make([]string, len(argv))
	for i, a := range argv {
		for _, m := range mask {
			if v := string(m.Value); len(v) >= minLen && strings.Contains(a, v) {
				a = strings.ReplaceAll(a, v, redact.Token(key, m.Value))
			}
		}
		out[i] = a
	}
	return out, nil
}

// openAudit opens the audit log, when the host or the policy names one,
// and records the launch, every decision, the injected secrets (by name
// and fingerprint), what the broker keeps and what redaction masks; from
// then on, what the broker does. Call it after Plan.startBroker. A nil log records nothing,
// and all its methods may be called.
func (l *Plan) openAudit(argv []string) (*audit.Log, error) {
	path := l.host.AuditPath
	if path == "" {
		path = l.opt.Policy.AuditPath
	}
	if path == "" {
		return nil, nil
	}
	alog, err := audit.Open(path, l.host.Home)
	if err != nil {
		return nil, err
	}
	p := l.opt.Policy
	if p.AuditWarn {
		alog.WarnOnError()
	}
	logged, err := l.maskArgs(argv)
	if err != nil {
		alog.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	alog.Launch(logged, p, l.Result)
	alog.Decisions(l.Result)
	if len(l.injected) > 0 {
		key, err := l.key()
		if err != nil {
			alog.Close()
			return nil, fmt.Errorf("audit: %w", err)
		}
		for _, name := range l.Result.Injected {
			spec := p.SecretSpec(name)
			from := spec.From
			if f := l.sources[name]; f != "" {
				from = f // the source that gave it (the default: env or store)
			}
			alog.Injected(name, string(from), string(spec.Deliver), redact.AuditFingerprint(key, []byte(l.injected[name])))
		}
	}
	if len(l.brokered) > 0 {
		alog.Brokered(l.brokered)
	}
	if p.Redact.Enabled {
		alog.Redaction(l.maskedNames())
	}
	if err := l.auditFailed(alog); err != nil {
		alog.Close()
		return nil, err
	}
	l.alog.Store(alog)
	return alog, nil
}
