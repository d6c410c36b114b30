package catalogs

import (
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret value in the output of Redact and in errors.
const Redacted = "xxxxx"

// secretKeys are property names whose values are always secrets.
var secretKeys = map[string]bool{
	"credential":           true,
	"token":                true,
	"secret":               true,
	"password":             true,
	"key":                  true,
	"private-key":          true,
	"session":              true,
	"header.authorization": true,
}

// secretWords make any property name that contains one of them secret.
var secretWords = []string{"secret", "password", "passwd", "token", "credential", "key", "session", "authorization"}

// dsnSecret matches key=value secrets inside connection strings, such as
// PostgreSQL's "host=h password=pw" form or a query parameter "?password=pw".
var dsnSecret = regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|token|sslpassword|access_token)(\s*=\s*)('[^']*'|[^\s&;]+)`)

// userinfoSecret matches the password of scheme://user:password@ anywhere in
// a string, also where the URI does not parse or sits inside a longer message.
var userinfoSecret = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):[^@\s/]*@`)

// IsSecretKey reports whether the value of the catalog property key is a secret.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	if secretKeys[k] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Redact returns a copy of props that is safe to log or put in an error: the
// values of secret keys (see IsSecretKey) become Redacted, and passwords
// inside URIs and DSNs (postgres://u:pw@h/db, "password=pw") are replaced.
func Redact(props map[string]string) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		if IsSecretKey(k) {
			if v != "" {
				v = Redacted
			}
			out[k] = v
			continue
		}
		out[k] = RedactURI(v)
	}
	return out
}

// RedactURI replaces the password of a URI's user info and secret-looking
// key=value pairs (password=..., token=...) in a DSN or query string.
func RedactURI(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), Redacted)
				s = u.String()
				s = strings.Replace(s, ":"+url.QueryEscape(Redacted)+"@", ":"+Redacted+"@", 1)
			}
		}
	}
	s = userinfoSecret.ReplaceAllString(s, "${1}:"+Redacted+"@")
	return dsnSecret.ReplaceAllString(s, "${1}${2}"+Redacted)
}

// secretValues lists the secret strings of props, longest first, so that an
// error message can be scrubbed of them whatever library produced it.
func secretValues(props map[string]string) []string {
	seen := map[string]bool{}
	add := func(v string) {
		// Very short values ("1", "on") would scrub ordinary words; secrets are longer.
		if len(v) >= 4 {
			seen[v] = true
			if esc := url.QueryEscape(v); esc != v {
				seen[esc] = true
			}
		}
	}
	for k, v := range props {
		if IsSecretKey(k) {
			add(v)
			// OAuth2 client credentials are "id:secret"; the parts can surface alone.
			if id, sec, ok := strings.Cut(v, ":"); ok {
				add(sec)
				_ = id
			}
			if strings.HasPrefix(strings.ToLower(v), "bearer ") {
				add(v[len("bearer "):])
			}
			continue
		}
		if strings.Contains(v, "://") {
			if u, err := url.Parse(v); err == nil && u.User != nil {
				if pw, has := u.User.Password(); has {
					add(pw)
				}
			}
		}
		for _, m := range dsnSecret.FindAllStringSubmatch(v, -1) {
			add(strings.Trim(m[3], "'"))
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub removes every secret of props from s.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return RedactURI(s)
}

// redactedError carries a message scrubbed of secrets while keeping the cause
// chain for errors.Is and errors.As.
type redactedError struct {
	msg   string
	cause []error
}

func (e *redactedError) Error() string   { return e.msg }
func (e *redactedError) Unwrap() []error { return e.cause }

// wrapErr builds "prefix: cause" with every secret of props removed from the
// message, wrapping cause and the extra sentinels.
func wrapErr(props map[string]string, prefix string, cause error, sentinels ...error) error {
	msg := prefix
	if cause != nil {
		msg += ": " + cause.Error()
	}
	chain := make([]error, 0, len(sentinels)+1)
	if cause != nil {
		chain = append(chain, cause)
	}
	for _, s := range sentinels {
		if s != nil && (cause == nil || !errors.Is(cause, s)) {
			chain = append(chain, s)
		}
	}
	return &redactedError{msg: scrub(msg, secretValues(props)), cause: chain}
}
