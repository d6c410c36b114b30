package config

import "strings"

// secretWords mark catalog property keys whose values must never be logged or put in an
// error message.
var secretWords = []string{"credential", "token", "secret", "password", "key"}

// IsSecretKey reports whether a catalog property key names a secret (its lower-cased name
// contains credential, token, secret, password or key), e.g. "s3.secret-access-key",
// "rest.auth.token" or "gcs.oauth2.token".
func IsSecretKey(k string) bool {
	l := strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// Redacted returns a copy of props with the value of every secret key (see IsSecretKey)
// replaced by "<redacted>", for logging.
func Redacted(props map[string]string) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		if IsSecretKey(k) {
			v = "<redacted>"
		}
		out[k] = v
	}
	return out
}
