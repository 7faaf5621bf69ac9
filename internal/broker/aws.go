package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// AWSCred is one set of AWS keys the tree holds fakes of (a profile of
// ~/.aws/credentials, or the AWS_* variables). AWS requests are signed
// with the secret key, never send it, so the broker cannot swap it: a
// request to an AWS endpoint signed with the fake keys is verified with
// the fake secret and signed again with the real keys (package sigv4).
type AWSCred struct {
	// Name names it in the audit ("aws:default", "aws:env"); never a value.
	Name string
	// Fake are the keys the tree holds. A session token is optional.
	Fake sigv4.Credentials
	// Hosts are hosts besides AWS's own (AWSHosts) its requests are
	// re-signed for: a profile's endpoint_url host. None means AWS's only.
	Hosts []string
	// Real gives the real keys when a request is re-signed (see
	// [AWSStatic], [AWSProcess]). Required.
	Real AWSSource
	// Env, when true, gives the child the fakes in AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (ChildEnv).
	Env bool
}

// AWSHosts are AWS's own endpoints: every AWS credential is re-signed for
// them.
var AWSHosts = []string{"*.amazonaws.com", "*.amazonaws.com.cn"}

// AWSMaxBody caps the body the broker reads to hash a request that
// declares no payload hash (every service but S3 signs the body's hash;
// their requests are small). A larger one is refused ("sigv4-body-size").
const AWSMaxBody = 32 << 20

// awsBound reports whether c's requests may be re-signed for target.
func (c *AWSCred) bound(target string) bool {
	for _, h := range AWSHosts {
		if matchHost(h, target) {
			return true
		}
	}
	for _, h := range c.Hosts {
		if matchHost(h, target) {
			return true
		}
	}
	return false
}

// awsBound reports whether any AWS credential is re-signed for target
// (its CONNECT is intercepted).
func (b *Broker) awsBound(target string) bool {
	for i := range b.cfg.AWS {
		if b.cfg.AWS[i].bound(target) {
			return true
		}
	}
	return false
}

// awsHosts are the host patterns the launch CA must permit for AWS.
func awsHosts(creds []AWSCred) []string {
	if len(creds) == 0 {
		return nil
	}
	hosts := append([]string(nil), AWSHosts...)
	for _, c := range creds {
		hosts = append(hosts, c.Hosts...)
	}
	return hosts
}

// checkAWS checks the AWS credentials of a Config.
func checkAWS(creds []AWSCred) error {
	seen := map[string]bool{}
	for _, c := range creds {
		if c.Name == "" || c.Real == nil || c.Fake.AccessKeyID == "" || c.Fake.SecretAccessKey == "" {
			return fmt.Errorf("broker: AWS credential %q: a name, fake keys and a source of the real ones are required", c.Name)
		}
		if seen[c.Fake.AccessKeyID] {
			return fmt.Errorf("broker: AWS credential %q: its fake access key id is another's", c.Name)
		}
		seen[c.Fake.AccessKeyID] = true
	}
	return nil
}

// awsEnv adds the fakes of the credentials marked Env to env, and reports
// whether there are AWS credentials (proxy mode is then on).
func awsEnv(creds []AWSCred, env map[string]string) bool {
	for _, c := range creds {
		if !c.Env {
			continue
		}
		env["AWS_ACCESS_KEY_ID"] = c.Fake.AccessKeyID
		env["AWS_SECRET_ACCESS_KEY"] = c.Fake.SecretAccessKey
		if c.Fake.SessionToken != "" {
			env["AWS_SESSION_TOKEN"] = c.Fake.SessionToken
		}
	}
	return len(creds) > 0
}

// awsByKey returns the credential whose fake access key id is id: one
// of the launch's, or keys AWS minted for the tree that have not expired
// (awsmint.go).
func (b *Broker) awsByKey(id string) *AWSCred {
	for i := range b.cfg.AWS {
		if b.cfg.AWS[i].Fake.AccessKeyID == id {
			return &b.cfg.AWS[i]
		}
	}
	return b.mintedByKey(id)
}

// resignAWS re-signs r, on its way to target, when it is signed with an
// AWS fake: verified with the fake secret, signed again with the real
// keys. An intercepted AWS request signed with a key that is no fake of
// the launch, or in a way that cannot be re-signed soundly (presigned
// with a fake, signed chunks, SigV4A), or whose signature does not verify
// is refused (403, a "denied" event whose place names the reason). A fake
// key id sent to a host it is not re-signed for is refused as a leak. A
// refusal is answered to w as an AWS error (AccessDenied, the reason in
// its message) that SDKs report as it is; resignAWS then returns false.
func (b *Broker) resignAWS(w http.ResponseWriter, r *http.Request, target string, secure bool) (*AWSCred, bool) {
	if len(b.cfg.AWS) == 0 {
		return nil, true
	}
	deny := func(c *AWSCred, kind, place, msg string) (*AWSCred, bool) {
		name := ""
		if c != nil {
			name = c.Name
		}
		b.audit(Event{Kind: kind, Secret: name, Host: target, Place: place})
		awsError(w, http.StatusForbidden, place, msg)
		return nil, false
	}
	if sigv4.Presigned(r) {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		for k, vs := range q {
			if !strings.EqualFold(k, "X-Amz-Credential") || len(vs) == 0 {
				continue
			}
			id, _, _ := strings.Cut(vs[0], "/")
			if c := b.awsByKey(id); c != nil {
				return deny(c, "denied", string(sigv4.ReasonPresigned), "a presigned URL signed with the fake AWS keys cannot be re-signed: sign requests in the Authorization header")
			}
		}
		return nil, true // someone else's URL: the broker holds no key of it
	}
	auth := r.Header.Get("Authorization")
	aws := b.awsBound(target)
	if !aws {
		for i := range b.cfg.AWS {
			if c := &b.cfg.AWS[i]; auth != "" && strings.Contains(auth, c.Fake.AccessKeyID) {
				return deny(c, "refused", "header:Authorization", c.Name+"'s fake is not sent to "+target+": it is re-signed for AWS endpoints only")
			}
		}
		return nil, true
	}
	if !strings.HasPrefix(auth, "AWS4-") {
		return nil, true // not SigV4 (an anonymous request, or another scheme)
	}
	s, err := sigv4.Parse(r)
	if err != nil {
		var c *AWSCred
		if a, aerr := sigv4.ParseAuthorization(auth); aerr == nil {
			c = b.awsByKey(a.AccessKeyID)
		}
		return deny(c, "denied", string(sigv4.ReasonOf(err)), err.Error())
	}
	c := b.awsByKey(s.AccessKeyID)
	if c == nil {
		return deny(nil, "denied", "sigv4-unknown-key", "the request is signed with an AWS access key that is not one of this launch's fakes")
	}
	if !c.bound(target) {
		return deny(c, "refused", "header:Authorization", c.Name+"'s fake is not re-signed for "+target)
	}
	if !secure {
		return deny(c, "denied", "sigv4-cleartext", c.Name+" is not re-signed in the clear: use https")
	}
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != "" && tok != c.Fake.SessionToken {
		return deny(c, "denied", "sigv4-token", "the session token is not "+c.Name+"'s fake")
	}
	var bodyHash string
	if s.NeedsBody() {
		// The bodies held at once are capped too: a tree that sends many
		// at a time is refused, not served out of the broker's memory.
		hold := int64(AWSMaxBody + 1)
		if r.ContentLength >= 0 && r.ContentLength <= AWSMaxBody {
			hold = r.ContentLength
		}
		if awsHeld.Add(hold) > testOnlyAWSMaxHeld {
			awsHeld.Add(-hold)
			return deny(c, "denied", "sigv4-body-size", "the broker holds too many request bodies to hash at once: send X-Amz-Content-Sha256")
		}
		h, body, err := hashBody(r.Body)
		if err != nil {
			awsHeld.Add(-hold)
			return deny(c, "denied", "sigv4-body-size", "a request without X-Amz-Content-Sha256 is hashed by the broker, up to 32 MiB: "+err.Error())
		}
		bodyHash = h
		held := &heldBody{n: hold}
		// Released when the transport closes the body, or at the latest
		// when the request ends (a later refusal never sends it).
		context.AfterFunc(r.Context(), held.release)
		if body != nil && body != http.NoBody {
			held.ReadCloser, r.Body = body, held
		} else {
			held.release()
		}
	}
	if err := s.Verify(r, c.Fake.SecretAccessKey, bodyHash); err != nil {
		return deny(c, "denied", string(sigv4.ReasonOf(err)), err.Error())
	}
	real, err := c.Real.Credentials(r.Context())
	if err == nil {
		err = s.Resign(r, real, bodyHash)
	}
	if err != nil {
		b.audit(Event{Kind: "denied", Secret: c.Name, Host: target, Place: "sigv4-credentials"})
		awsError(w, http.StatusBadGateway, "sigv4-credentials", c.Name+": the real AWS credentials: "+b.scrubString(err.Error()))
		return nil, false
	}
	// The answer is scrubbed of the keys, fetched ones too.
	b.learnAWS(c, real)
	b.audit(Event{Kind: "swapped", Secret: c.Name, Host: target, Place: "sigv4"})
	return c, true
}

// awsError answers an AWS request the broker refuses in the XML error
// form of AWS's query and REST-XML services, which the SDKs parse (a JSON
// service's client still reports the status): the client shows the
// reason, and does not retry it as a malformed answer.
func awsError(w http.ResponseWriter, status int, reason, msg string) {
	code := "AccessDenied"
	if status != http.StatusForbidden {
		code = "ServiceUnavailable"
	}
	var m bytes.Buffer
	xml.EscapeText(&m, []byte("envsieve broker refused ("+reason+"): "+msg))
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Envsieve-Refused", reason)
	w.WriteHeader(status)
	io.WriteString(w, "<ErrorResponse><Error><Type>Sender</Type><Code>"+code+"</Code><Message>"+m.String()+
		"</Message></Error><RequestId>envsieve</RequestId></ErrorResponse>\n")
}

var errBodyTooLarge = errors.New("the body is larger")

// awsHeld counts the bytes of the request bodies the broker holds to
// hash (of every broker of the process), up to testOnlyAWSMaxHeld.
var awsHeld atomic.Int64

// testOnlyAWSMaxHeld is the cap of awsHeld: 256 MiB (tests lower it).
var testOnlyAWSMaxHeld int64 = 256 << 20

// heldBody is a held request body: its bytes count in awsHeld until the
// transport closes it.
type heldBody struct {
	io.ReadCloser
	n    int64
	once sync.Once
}

func (h *heldBody) release() { h.once.Do(func() { awsHeld.Add(-h.n) }) }

func (h *heldBody) Close() error {
	h.release()
	return h.ReadCloser.Close()
}

// hashBody reads a request body (up to AWSMaxBody) and returns its hex
// SHA-256 and a body to send in its place.
func hashBody(body io.ReadCloser) (string, io.ReadCloser, error) {
	if body == nil || body == http.NoBody {
		sum := sha256.Sum256(nil)
		return hex.EncodeToString(sum[:]), body, nil
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, AWSMaxBody+1))
	if err != nil {
		return "", nil, err
	}
	if len(data) > AWSMaxBody {
		return "", nil, errBodyTooLarge
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), io.NopCloser(bytes.NewReader(data)), nil
}

// AWSSource gives the real AWS keys, current (refreshed when they
// expire).
type AWSSource interface {
	Credentials(ctx context.Context) (sigv4.Credentials, error)
}

// AWSFunc is a source of keys as a function (the launcher's, which
// re-reads the user's ~/.aws/credentials when it changes).
type AWSFunc func(ctx context.Context) (sigv4.Credentials, error)

// Credentials calls f.
func (f AWSFunc) Credentials(ctx context.Context) (sigv4.Credentials, error) { return f(ctx) }

// AWSStatic is keys that do not change: a profile of the user's
// ~/.aws/credentials, or the user's AWS_* variables.
type AWSStatic sigv4.Credentials

// Credentials returns the keys.
func (s AWSStatic) Credentials(context.Context) (sigv4.Credentials, error) {
	return sigv4.Credentials(s), nil
}

// AWSRefreshBefore is how long before its expiration the broker gets new
// temporary keys.
const AWSRefreshBefore = 5 * time.Minute

// AWSProcess gives the keys a profile's credential_process prints, run by
// the broker outside the tree, again when they are about to expire. A
// failed refresh keeps the last keys while they are valid.
type AWSProcess struct {
	// Argv is the command (the profile's credential_process, split as
	// botocore splits it). Required.
	Argv []string
	// Env is its whole environment; nil is an error, never the broker's.
	Env []string
	// Dir is its working directory; "" is the broker's.
	Dir string
	// Timeout bounds one run; 0 means a minute.
	Timeout time.Duration

	mu  sync.Mutex
	cur sigv4.Credentials
	exp time.Time
	ok  bool
}

// Credentials returns the current keys, running the process when there
// are none or they expire within AWSRefreshBefore.
func (p *AWSProcess) Credentials(ctx context.Context) (sigv4.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.ok && (p.exp.IsZero() || p.exp.Sub(now) > AWSRefreshBefore) {
		return p.cur, nil
	}
	c, exp, err := p.run(ctx)
	if err != nil {
		if p.ok && (p.exp.IsZero() || now.Before(p.exp)) {
			return p.cur, nil
		}
		return sigv4.Credentials{}, err
	}
	p.cur, p.exp, p.ok = c, exp, true
	return c, nil
}

// processOutput is credential_process's output (version 1).
type processOutput struct {
	Version         int
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string
	SessionToken    string
	Expiration      string
}

// run runs the process once. Its output and errors are never in the
// error: they may hold keys.
func (p *AWSProcess) run(ctx context.Context) (sigv4.Credentials, time.Time, error) {
	if len(p.Argv) == 0 || p.Env == nil {
		return sigv4.Credentials{}, time.Time{}, errors.New("credential_process: no command or no environment")
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(p.Timeout, time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Env, cmd.Dir, cmd.WaitDelay = p.Env, p.Dir, time.Second
	var out limitedBuffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return sigv4.Credentials{}, time.Time{}, fmt.Errorf("credential_process %s: %w", filepath.Base(p.Argv[0]), err)
	}
	if out.over {
		return sigv4.Credentials{}, time.Time{}, errors.New("credential_process: output larger than 1 MiB")
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	var o processOutput
	if err := dec.Decode(&o); err != nil || o.Version != 1 || o.AccessKeyID == "" || o.SecretAccessKey == "" {
		return sigv4.Credentials{}, time.Time{}, errors.New("credential_process: the output is not version 1 JSON with AccessKeyId and SecretAccessKey")
	}
	var exp time.Time
	if o.Expiration != "" {
		t, err := time.Parse(time.RFC3339, o.Expiration)
		if err != nil {
			return sigv4.Credentials{}, time.Time{}, errors.New("credential_process: Expiration is not RFC 3339")
		}
		exp = t
	}
	return sigv4.Credentials{AccessKeyID: o.AccessKeyID, SecretAccessKey: o.SecretAccessKey, SessionToken: o.SessionToken}, exp, nil
}

// limitedBuffer keeps the first MiB written to it.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.Len()+len(p) > 1<<20 {
		l.over = true
		return len(p), nil
	}
	return l.Buffer.Write(p)
}
