package login

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

func init() {
	register(Format{
		Name:  "aws-credentials",
		Paths: []string{".aws/credentials"},
		Fake:  fakeAWSCredentials,
	})
}

// AWSHosts are AWS's endpoints, where a profile's requests are re-signed
// (as broker.AWSHosts; a profile's endpoint_url host is the launcher's
// to add, from ~/.aws/config).
var AWSHosts = []string{"*.amazonaws.com", "*.amazonaws.com.cn"}

// The keys of a profile that hold its credentials.
const (
	awsKeyID  = "aws_access_key_id"
	awsSecret = "aws_secret_access_key"
	awsToken  = "aws_session_token"
	// awsLegacyToken is boto2's name, which botocore still reads.
	awsLegacyToken = "aws_security_token"
)

// fakeAWSCredentials fakes ~/.aws/credentials, an INI file as botocore
// reads it (Python's configparser: "[profile]" sections, "key = value" or
// "key: value", "#" and ";" comment lines, an indented line continuing a
// nested setting). In each profile the access key id, secret access key
// and session token are replaced by fakes of the same shape (AKIA/ASIA and
// 16 upper-case letters and digits, a 40-character secret); everything
// else passes. A profile's keys are one credential, re-signed with by
// the broker (Cred.AWS); its name ("aws:PROFILE") fakes the secret, and
// the id and token are faked under NAME:id and NAME:token. Not understood, so the file is masked: a key
// or section given twice (configparser refuses it too), a profile with an
// id and no secret or the other way round, a token without keys, and a
// credential_process (a command the tree would run to get real keys).
func fakeAWSCredentials(real []byte, fake Faker) ([]byte, []Cred, error) {
	type profile struct {
		name string
		keys map[string]string
	}
	var out bytes.Buffer
	var profiles []*profile
	var cur *profile
	seen := map[string]bool{}
	nested := false // the last key had an empty value: indented lines continue it
	lines := strings.SplitAfter(string(real), "\n")
	// First pass: parse, and find each profile's keys.
	type slot struct {
		p          *profile
		key, value string
		prefix     string // the line up to the value
		end        string // after the value
	}
	slots := make([]*slot, len(lines))
	for n, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(body)
		switch {
		case trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';':
			continue
		case body[0] == ' ' || body[0] == '\t':
			if cur == nil || !nested {
				return nil, nil, fmt.Errorf("aws-credentials: line %d: an indented line that continues nothing", n+1)
			}
			continue
		case trimmed[0] == '[':
			if !strings.HasSuffix(trimmed, "]") || len(trimmed) < 3 {
				return nil, nil, fmt.Errorf("aws-credentials: line %d: a malformed section", n+1)
			}
			name := strings.TrimSpace(trimmed[1 : len(trimmed)-1])
			if seen["["+name] {
				return nil, nil, fmt.Errorf("aws-credentials: line %d: section %q given twice", n+1, name)
			}
			seen["["+name] = true
			cur = &profile{name: name, keys: map[string]string{}}
			profiles = append(profiles, cur)
			nested = false
			continue
		}
		if cur == nil {
			return nil, nil, fmt.Errorf("aws-credentials: line %d: a setting outside a section", n+1)
		}
		i := strings.IndexAny(body, "=:")
		if i < 0 {
			return nil, nil, fmt.Errorf("aws-credentials: line %d: not key = value", n+1)
		}
		key := strings.ToLower(strings.TrimSpace(body[:i]))
		value := strings.TrimSpace(body[i+1:])
		if key == "" {
			return nil, nil, fmt.Errorf("aws-credentials: line %d: an empty key", n+1)
		}
		if _, dup := cur.keys[key]; dup {
			return nil, nil, fmt.Errorf("aws-credentials: line %d: key %s of [%s] given twice", n+1, key, cur.name)
		}
		cur.keys[key] = value
		nested = value == ""
		if key == "credential_process" {
			return nil, nil, fmt.Errorf("aws-credentials: line %d: [%s] has a credential_process, which the tree would run for real keys", n+1, cur.name)
		}
		switch key {
		case awsKeyID, awsSecret, awsToken, awsLegacyToken:
			start := strings.Index(body[i+1:], value) + i + 1
			slots[n] = &slot{p: cur, key: key, value: value, prefix: body[:start], end: line[start+len(value):]}
		}
	}
	// Second pass: each profile's credential, then the fake file.
	var creds []Cred
	fakes := map[*profile]map[string]string{}
	for _, p := range profiles {
		id, secret := p.keys[awsKeyID], p.keys[awsSecret]
		token := p.keys[awsToken]
		if token == "" {
			token = p.keys[awsLegacyToken]
		} else if t := p.keys[awsLegacyToken]; t != "" && t != token {
			return nil, nil, fmt.Errorf("aws-credentials: [%s] has two different session tokens", p.name)
		}
		if id == "" && secret == "" && token == "" {
			continue
		}
		if id == "" || secret == "" {
			return nil, nil, fmt.Errorf("aws-credentials: [%s] has an access key id or a secret without the other", p.name)
		}
		if len(id) < 16 || len(secret) < 16 {
			// AWS's are 16 to 128 and 40: a shorter value's fake could
			// also be anywhere else in the file.
			return nil, nil, fmt.Errorf("aws-credentials: [%s]: keys too short to be AWS's", p.name)
		}
		name := "aws:" + p.name
		keys := AWSKeys{Real: AWSKey{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token}}
		keys.Fake = AWSKey{
			AccessKeyID:     fake(name+":id", id),
			SecretAccessKey: fake(name, secret),
		}
		if token != "" {
			keys.Fake.SessionToken = fake(name+":token", token)
		}
		fakes[p] = map[string]string{awsKeyID: keys.Fake.AccessKeyID, awsSecret: keys.Fake.SecretAccessKey,
			awsToken: keys.Fake.SessionToken, awsLegacyToken: keys.Fake.SessionToken}
		creds = append(creds, Cred{Name: name, Real: secret, Hosts: AWSHosts, In: []string{"sigv4"}, AWS: &keys})
	}
	for n, line := range lines {
		s := slots[n]
		if s == nil || s.value == "" {
			out.WriteString(line)
			continue
		}
		out.WriteString(s.prefix + fakes[s.p][s.key] + s.end)
	}
	for _, c := range creds {
		r, f := c.AWS.Real, c.AWS.Fake
		for _, v := range [][2]string{{r.AccessKeyID, f.AccessKeyID}, {r.SecretAccessKey, f.SecretAccessKey}, {r.SessionToken, f.SessionToken}} {
			// A real value is nowhere in the file (unless it is its own
			// fake: the identity faker that reads a fake file back).
			if v[0] != "" && v[0] != v[1] && bytes.Contains(out.Bytes(), []byte(v[0])) {
				return nil, nil, fmt.Errorf("aws-credentials: %s: the fake file would still hold a real key", c.Name)
			}
		}
	}
	return out.Bytes(), creds, nil
}

// AWSEnv fakes the AWS keys of an environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN or the legacy
// AWS_SECURITY_TOKEN): it returns the variables' fakes and their
// credential, named "aws:env", or ok false when env holds no keys. An id
// without a secret, or the other way round, is an error: the launcher
// then drops the variables.
func AWSEnv(env map[string]string, fake Faker) (fakes map[string]string, c Cred, ok bool, err error) {
	id, secret := env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
	token := env["AWS_SESSION_TOKEN"]
	if token == "" {
		token = env["AWS_SECURITY_TOKEN"]
	}
	if id == "" && secret == "" {
		return nil, Cred{}, false, nil
	}
	if id == "" || secret == "" {
		return nil, Cred{}, false, fmt.Errorf("aws: the environment has an access key id or a secret without the other")
	}
	const name = "aws:env"
	keys := AWSKeys{Real: AWSKey{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token}}
	keys.Fake = AWSKey{AccessKeyID: fake(name+":id", id), SecretAccessKey: fake(name, secret)}
	fakes = map[string]string{"AWS_ACCESS_KEY_ID": keys.Fake.AccessKeyID, "AWS_SECRET_ACCESS_KEY": keys.Fake.SecretAccessKey}
	if token != "" {
		keys.Fake.SessionToken = fake(name+":token", token)
		for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"} {
			if env[k] != "" {
				fakes[k] = keys.Fake.SessionToken
			}
		}
	}
	return fakes, Cred{Name: name, Real: secret, Hosts: AWSHosts, In: []string{"sigv4"}, AWS: &keys}, true, nil
}

// AWSEndpointHosts reads ~/.aws/config and returns, by profile name
// ("default", "work" for "[profile work]"), the hosts of its endpoint_url
// settings: the profile's own, those nested under a service key
// ("s3 =\n  endpoint_url = ..."), and those of the "[services NAME]"
// section its "services" names. The broker re-signs the profile's
// requests for them too. An endpoint_url that is not an absolute http(s)
// URL is an error.
func AWSEndpointHosts(config []byte) (map[string][]string, error) {
	sections, err := awsConfigSections(config)
	if err != nil {
		return nil, err
	}
	type section = awsSection
	hostOf := func(u string) (string, error) {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return "", fmt.Errorf("aws config: endpoint_url %q is not an absolute http(s) URL", u)
		}
		return p.Host, nil
	}
	collect := func(s *section, into *[]string) error {
		var urls []string
		if u := s.top["endpoint_url"]; u != "" {
			urls = append(urls, u)
		}
		for _, sub := range s.nested {
			if u := sub["endpoint_url"]; u != "" {
				urls = append(urls, u)
			}
		}
		for _, u := range urls {
			h, err := hostOf(u)
			if err != nil {
				return err
			}
			if !slices.Contains(*into, h) {
				*into = append(*into, h)
			}
		}
		return nil
	}
	out := map[string][]string{}
	for name, s := range sections {
		profile, ok := strings.CutPrefix(name, "profile ")
		if !ok && name != "default" {
			continue // sso-session, services: reached through a profile
		}
		var hosts []string
		if err := collect(s, &hosts); err != nil {
			return nil, err
		}
		if svc := s.top["services"]; svc != "" {
			if ss := sections["services "+svc]; ss != nil {
				if err := collect(ss, &hosts); err != nil {
					return nil, err
				}
			}
		}
		if len(hosts) > 0 {
			slices.Sort(hosts)
			out[profile] = hosts
		}
	}
	return out, nil
}

// awsSection is a section of ~/.aws/config: its settings, and those
// nested under a key with an empty value ("s3 =\n  endpoint_url = ...").
type awsSection struct {
	top    map[string]string
	nested map[string]map[string]string
}

// awsConfigSections parses ~/.aws/config into its sections, by name with
// its words single-spaced ("profile work", "default", "sso-session x").
func awsConfigSections(config []byte) (map[string]*awsSection, error) {
	type section = awsSection
	sections := map[string]*section{}
	var cur *section
	var parent string // the key indented lines are nested under
	for n, line := range strings.Split(string(config), "\n") {
		body := strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(body)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if trimmed[0] == '[' && body[0] == '[' {
			if !strings.HasSuffix(trimmed, "]") {
				return nil, fmt.Errorf("aws config: line %d: a malformed section", n+1)
			}
			name := strings.Join(strings.Fields(trimmed[1:len(trimmed)-1]), " ")
			cur = &section{top: map[string]string{}, nested: map[string]map[string]string{}}
			sections[name] = cur
			parent = ""
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("aws config: line %d: a setting outside a section", n+1)
		}
		i := strings.IndexAny(trimmed, "=:")
		if i < 0 {
			return nil, fmt.Errorf("aws config: line %d: not key = value", n+1)
		}
		key, value := strings.ToLower(strings.TrimSpace(trimmed[:i])), strings.TrimSpace(trimmed[i+1:])
		if body[0] == ' ' || body[0] == '\t' {
			if parent == "" {
				return nil, fmt.Errorf("aws config: line %d: an indented line that continues nothing", n+1)
			}
			cur.nested[parent][key] = value
			continue
		}
		cur.top[key] = value
		parent = ""
		if value == "" {
			parent = key
			cur.nested[key] = map[string]string{}
		}
	}
	return sections, nil
}

// AWSConfigFetchers reads ~/.aws/config and returns, by profile name, how
// a profile that gets its keys by other means than the credentials file
// gets them: "credential_process" (a command botocore runs) or "sso" (IAM
// Identity Center: sso_start_url, sso_session, sso_account_id or
// sso_role_name), or "credential_source:SOURCE" (a role assumed with the
// keys of the environment, Environment, or of the machine's metadata
// service, Ec2InstanceMetadata or EcsContainer). Without a broker in a
// sealed tree, the command runs there, and an SSO profile finds its
// cache masked (docs/broker.md).
func AWSConfigFetchers(config []byte) (map[string]string, error) {
	sections, err := awsConfigSections(config)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, s := range sections {
		profile, ok := strings.CutPrefix(name, "profile ")
		if !ok && name != "default" {
			continue
		}
		switch {
		case s.top["credential_process"] != "":
			out[profile] = "credential_process"
		case s.top["sso_start_url"] != "" || s.top["sso_session"] != "" || s.top["sso_account_id"] != "" || s.top["sso_role_name"] != "":
			out[profile] = "sso"
		case s.top["role_arn"] != "" && s.top["credential_source"] != "":
			out[profile] = "credential_source:" + s.top["credential_source"]
		}
	}
	return out, nil
}
