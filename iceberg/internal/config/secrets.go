package config

import (
	"net/url"
	"regexp"
	"strings"
)

// RedactedValue replaces every secret value in redacted property maps, printed configs
// and error messages.
const RedactedValue = "xxxxx"

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

// IsSecretKey reports whether a catalog property key names a secret: its lower-cased name
// contains secret, password, passwd, token, credential, key, session or authorization,
// e.g. "s3.secret-access-key", "rest.auth.token", "glue.session-token" or
// "header.Authorization".
func IsSecretKey(k string) bool {
	l := strings.ToLower(k)
	if secretKeys[l] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// Redacted returns a copy of props that is safe to log or put in an error: the non-empty
// value of every secret key (see IsSecretKey) becomes RedactedValue, and passwords inside
// other values (postgres://u:pw@h/db, "password=pw", "?token=t") are replaced (see
// RedactURI).
func Redacted(props map[string]string) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		if IsSecretKey(k) {
			if v != "" {
				v = RedactedValue
			}
			out[k] = v
			continue
		}
		out[k] = RedactURI(v)
	}
	return out
}

// RedactURI replaces the password of a URI's user info and secret-looking key=value pairs
// (password=..., token=...) in a DSN or query string with RedactedValue.
func RedactURI(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), RedactedValue)
				s = u.String()
				s = strings.Replace(s, ":"+url.QueryEscape(RedactedValue)+"@", ":"+RedactedValue+"@", 1)
			}
		}
	}
	s = userinfoSecret.ReplaceAllString(s, "${1}:"+RedactedValue+"@")
	return dsnSecret.ReplaceAllString(s, "${1}${2}"+RedactedValue)
}

// DSNSecrets returns the secret values embedded in s: the password of a URI's user info
// and the values of password=, token= and similar pairs.
func DSNSecrets(s string) []string {
	var out []string
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if pw, has := u.User.Password(); has {
				out = append(out, pw)
			}
		}
	}
	for _, m := range dsnSecret.FindAllStringSubmatch(s, -1) {
		out = append(out, strings.Trim(m[3], "'"))
	}
	return out
}
