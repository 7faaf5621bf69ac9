package login

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AWSFetcher is a profile of ~/.aws/config that gets its keys by other
// means than the credentials file: a command (credential_process) or IAM
// Identity Center (sso_*). In a sealed tree it is a profile of fake static
// keys (AWSFakeProfiles) whose config lines that fetch keys are left out
// (AWSConfigFake); the broker gets the real keys outside the tree.
type AWSFetcher struct {
	// Profile is the profile's name ("default", "work").
	Profile string
	// Process is its credential_process command line, as the config
	// holds it ("" for an SSO profile).
	Process string
	// SSO is its IAM Identity Center settings (nil for a process).
	SSO *AWSSSOProfile
	// Role is its assume-role settings (role_arn with a source_profile).
	Role *AWSRoleProfile
	// Static is its static keys, when the config itself holds them (and
	// the profile fetches none): real values, faked as the credentials
	// file's are.
	Static *AWSKey
	// Endpoint is where the profile sends its SSO portal requests, when
	// its config names one: the endpoint_url nested under "sso" in the
	// profile or its services section, else the profile's endpoint_url.
	// OIDCEndpoint is the same for the SSO OIDC service ("sso_oidc"),
	// which refreshes the cached token.
	Endpoint, OIDCEndpoint string
}

// AWSSSOProfile is what the broker needs to fetch an SSO profile's role
// keys: the cached token's key (the sso_session's name, or the legacy
// sso_start_url), the portal's region, the account and the role.
type AWSSSOProfile struct {
	Session   string `json:"session,omitempty"`
	StartURL  string `json:"start_url,omitempty"`
	Region    string `json:"region"`
	AccountID string `json:"account_id"`
	RoleName  string `json:"role_name"`
}

// AWSRoleProfile is what the broker needs to assume an assume-role
// profile's role itself: the role, the source profile whose keys sign
// the call, and the call's settings.
type AWSRoleProfile struct {
	ARN         string `json:"arn"`
	Source      string `json:"source"`
	ExternalID  string `json:"external_id,omitempty"`
	SessionName string `json:"session_name,omitempty"`
	Duration    int    `json:"duration,omitempty"`
	Region      string `json:"region,omitempty"`
	// TokenFile is a web identity profile's web_identity_token_file (its
	// Source is then ""): the broker reads the token and calls
	// AssumeRoleWithWebIdentity.
	TokenFile string `json:"token_file,omitempty"`
}

// awsFetchKey reports whether key, in a profile, is one that makes
// botocore fetch keys: credential_process or an sso_ setting.
func awsFetchKey(key string) bool {
	return key == "credential_process" || strings.HasPrefix(key, "sso_")
}

// awsStaticKeys are a profile's static keys, which the config may hold
// as the credentials file does.
var awsStaticKeys = []string{awsKeyID, awsSecret, awsToken, awsLegacyToken}

// awsRoleKeys are the settings of an assume-role profile the fake
// leaves out.
var awsRoleKeys = []string{"role_arn", "source_profile", "external_id", "role_session_name", "duration_seconds", "web_identity_token_file"}

// AWSConfigFake reads ~/.aws/config and returns it without the lines that
// make a profile fetch its keys (credential_process, sso_*) or hold them
// (aws_access_key_id and the like: static keys in the config), each such
// profile's settings, and an error when the config cannot be understood
// or such a profile is incomplete (an SSO profile without its region,
// account, role or start URL; a credential_process that does not split
// as botocore splits it). The rest passes as it is: region, output,
// endpoint_url, role_arn, the sso-session and services sections.
// botocore tries a profile's SSO settings before the credentials file,
// and its credential_process after: with these lines gone, the fake
// static keys of the credentials file are what the tree's clients use.
// fetchers is nil (and fake the config) when no profile fetches keys.
//
// An assume-role profile (role_arn with a source_profile: not itself,
// and no mfa_serial, which would prompt, credential_source or
// web_identity_token_file) is one too: its role_arn, source_profile,
// external_id, role_session_name and duration_seconds go, and the broker
// assumes the role. So is a web identity profile (role_arn with a
// web_identity_token_file, no source_profile or credential_source): its
// role lines go, and the broker reads the token file and calls
// AssumeRoleWithWebIdentity (AWSRoleProfile.TokenFile). One whose name is in faked (the credentials file
// already fakes its keys) keeps its lines: botocore assumes its role
// before it reads that file, through the broker, and the role's keys STS
// answers are then the tree's.
func AWSConfigFake(config []byte, faked map[string]bool) (fake []byte, fetchers []AWSFetcher, err error) {
	sections, err := awsConfigSections(config)
	if err != nil {
		return nil, nil, err
	}
	profileOf := func(name string) (string, bool) {
		if p, ok := strings.CutPrefix(name, "profile "); ok {
			return p, true
		}
		return name, name == "default"
	}
	drop := map[string]bool{} // section names whose fetching lines go
	for name, s := range sections {
		p, ok := profileOf(name)
		if !ok {
			continue
		}
		f := AWSFetcher{Profile: p}
		switch {
		case s.top["credential_process"] != "":
			f.Process = s.top["credential_process"]
			if _, err := SplitCommand(f.Process); err != nil {
				return nil, nil, fmt.Errorf("aws config: [%s] credential_process: %w", name, err)
			}
		case s.top["sso_start_url"] != "" || s.top["sso_session"] != "" || s.top["sso_account_id"] != "" || s.top["sso_role_name"] != "":
			// As AWSConfigFetchers, and botocore's SSO provider.
			sso := &AWSSSOProfile{Session: s.top["sso_session"], StartURL: s.top["sso_start_url"],
				Region: s.top["sso_region"], AccountID: s.top["sso_account_id"], RoleName: s.top["sso_role_name"]}
			if sso.Session != "" {
				ss := sections["sso-session "+sso.Session]
				if ss == nil {
					return nil, nil, fmt.Errorf("aws config: [%s] names sso_session %q, which has no section", name, sso.Session)
				}
				sso.StartURL, sso.Region = ss.top["sso_start_url"], ss.top["sso_region"]
			}
			if sso.StartURL == "" || sso.Region == "" || sso.AccountID == "" || sso.RoleName == "" {
				return nil, nil, fmt.Errorf("aws config: [%s] lacks sso_start_url, sso_region, sso_account_id or sso_role_name", name)
			}
			f.SSO = sso
			endpoint := func(service string) string {
				if u := s.nested[service]["endpoint_url"]; u != "" {
					return u
				}
				if svc := s.top["services"]; svc != "" && sections["services "+svc] != nil {
					if u := sections["services "+svc].nested[service]["endpoint_url"]; u != "" {
						return u
					}
				}
				return s.top["endpoint_url"]
			}
			f.Endpoint, f.OIDCEndpoint = endpoint("sso"), endpoint("sso_oidc")
		case s.top["role_arn"] != "" && s.top["web_identity_token_file"] != "" && s.top["source_profile"] == "" && s.top["credential_source"] == "":
			// A web identity profile (botocore's
			// AssumeRoleWithWebIdentityProvider, tried before all others).
			if faked["aws:"+p] {
				continue
			}
			f.Role = &AWSRoleProfile{ARN: s.top["role_arn"], SessionName: s.top["role_session_name"], Region: s.top["region"],
				TokenFile: s.top["web_identity_token_file"]}
			f.Endpoint = s.nested["sts"]["endpoint_url"]
			if f.Endpoint == "" {
				f.Endpoint = s.top["endpoint_url"]
			}
		case s.top["role_arn"] != "" && s.top["source_profile"] != "":
			if s.top["source_profile"] == p || faked["aws:"+p] || s.top["mfa_serial"] != "" || s.top["credential_source"] != "" ||
				s.top["web_identity_token_file"] != "" {
				continue
			}
			src := s.top["source_profile"]
			if sections["profile "+src] == nil && !(src == "default" && sections["default"] != nil) && !faked["aws:"+src] {
				return nil, nil, fmt.Errorf("aws config: [%s] names source_profile %q, which is no profile", name, src)
			}
			r := &AWSRoleProfile{ARN: s.top["role_arn"], Source: src, ExternalID: s.top["external_id"],
				SessionName: s.top["role_session_name"], Region: s.top["region"]}
			if d := s.top["duration_seconds"]; d != "" {
				n, err := strconv.Atoi(d)
				if err != nil || n < 900 || n > 43200 {
					return nil, nil, fmt.Errorf("aws config: [%s] duration_seconds is not 900 to 43200", name)
				}
				r.Duration = n
			}
			f.Role = r
			f.Endpoint = s.nested["sts"]["endpoint_url"]
			if f.Endpoint == "" {
				f.Endpoint = s.top["endpoint_url"]
			}
		case s.top[awsKeyID] != "" || s.top[awsSecret] != "":
			// Static keys in the config itself (botocore reads them
			// last: ConfigProvider).
			k := &AWSKey{AccessKeyID: s.top[awsKeyID], SecretAccessKey: s.top[awsSecret], SessionToken: s.top[awsToken]}
			if k.SessionToken == "" {
				k.SessionToken = s.top[awsLegacyToken]
			}
			if len(k.AccessKeyID) < 16 || len(k.SecretAccessKey) < 16 {
				return nil, nil, fmt.Errorf("aws config: [%s] has an access key id or a secret without the other, or keys too short to be AWS's", name)
			}
			f.Static = k
		default:
			continue
		}
		drop[name] = true
		fetchers = append(fetchers, f)
	}
	if len(fetchers) == 0 {
		return config, nil, nil
	}
	defer func() {
		// No static real key is left in the fake (a line the walk did
		// not take for one).
		for _, f := range fetchers {
			if k := f.Static; k != nil && err == nil {
				for _, v := range []string{k.AccessKeyID, k.SecretAccessKey, k.SessionToken} {
					if v != "" && strings.Contains(string(fake), v) {
						fake, fetchers, err = nil, nil, fmt.Errorf("aws config: [%s]: the fake would still hold a real key", f.Profile)
						return
					}
				}
			}
		}
	}()
	// A chain of roles that comes back to itself (botocore refuses it).
	roles := map[string]string{}
	for _, f := range fetchers {
		if f.Role != nil && f.Role.Source != "" {
			roles[f.Profile] = f.Role.Source
		}
	}
	for p := range roles {
		seen := map[string]bool{}
		for q, ok := p, true; ok; q, ok = roles[q] {
			if seen[q] {
				return nil, nil, fmt.Errorf("aws config: profile %s's source_profile chain loops", p)
			}
			seen[q] = true
		}
	}
	sort.Slice(fetchers, func(i, j int) bool { return fetchers[i].Profile < fetchers[j].Profile })
	// The same walk as awsConfigSections, leaving out the fetching lines
	// of the sections in drop (with what is nested under them).
	var out strings.Builder
	cur, skipping := "", false
	for _, line := range strings.SplitAfter(string(config), "\n") {
		body := strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(body)
		switch {
		case trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';':
		case trimmed[0] == '[' && body[0] == '[':
			cur, skipping = strings.Join(strings.Fields(trimmed[1:len(trimmed)-1]), " "), false
		case body[0] == ' ' || body[0] == '\t':
			if skipping {
				continue
			}
		default:
			i := strings.IndexAny(trimmed, "=:")
			key := strings.ToLower(strings.TrimSpace(trimmed[:i]))
			skipping = drop[cur] && (awsFetchKey(key) || slices.Contains(awsRoleKeys, key) || slices.Contains(awsStaticKeys, key))
			if skipping {
				continue
			}
		}
		out.WriteString(line)
	}
	return []byte(out.String()), fetchers, nil
}

// Templates of the shape of temporary AWS keys (an STS session's), from
// which a fetching profile's fakes are derived: the real keys are known
// only when the broker fetches them, after the tree started.
const (
	awsTemplateID     = "ASIAQWER1234ASDF5678"
	awsTemplateSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// awsTemplateToken is a session token's shape: base64, 356 characters
// (an IAM Identity Center role's are about that long).
var awsTemplateToken = strings.Repeat("IQoJb3JpZ2luX2VjEAoaCXVzLWVhc3QtMSJHMEUCIQD+", 9)[:356]

// AWSFakeProfiles returns, for the fetching profiles, the credentials
// file's sections of their fake static keys (id, secret and session
// token, in the shape of temporary keys: what a credential_process or
// IAM Identity Center gives is known only when it runs, after the tree
// starts; the broker re-signs without a token where the real keys have
// none), and each profile's fake keys by its name ("aws:PROFILE"). The
// fakes are derived from the install key and the profile's name (fake),
// stable across launches.
func AWSFakeProfiles(fetchers []AWSFetcher, fake Faker) ([]byte, map[string]AWSKey, error) {
	var out strings.Builder
	keys := map[string]AWSKey{}
	for _, f := range fetchers {
		if f.Profile == "" || strings.ContainsAny(f.Profile, "[]\r\n") {
			return nil, nil, fmt.Errorf("aws config: profile %q cannot be a credentials file's section", f.Profile)
		}
		name := "aws:" + f.Profile
		k := AWSKey{AccessKeyID: fake(name+":id", awsTemplateID), SecretAccessKey: fake(name, awsTemplateSecret),
			SessionToken: fake(name+":token", awsTemplateToken)}
		if r := f.Static; r != nil {
			// Known keys: fakes of their own shape, a token only where
			// they have one.
			k = AWSKey{AccessKeyID: fake(name+":id", r.AccessKeyID), SecretAccessKey: fake(name, r.SecretAccessKey)}
			if r.SessionToken != "" {
				k.SessionToken = fake(name+":token", r.SessionToken)
			}
		}
		keys[name] = k
		fmt.Fprintf(&out, "\n[%s]\n%s = %s\n%s = %s\n", f.Profile, awsKeyID, k.AccessKeyID, awsSecret, k.SecretAccessKey)
		if k.SessionToken != "" {
			fmt.Fprintf(&out, "%s = %s\n", awsToken, k.SessionToken)
		}
	}
	return []byte(out.String()), keys, nil
}

// SplitCommand splits a credential_process command line as botocore does
// on POSIX systems (Python's shlex.split: words separated by blanks; '...'
// quotes everything; "..." quotes all but a backslash before " or \; a
// backslash outside quotes escapes the next character). An unterminated
// quote, a trailing backslash or an empty command is an error.
func SplitCommand(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("a trailing backslash")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unterminated quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New("an unterminated quote")
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("an empty command")
	}
	return words, nil
}
