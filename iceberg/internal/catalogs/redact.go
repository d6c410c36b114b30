package catalogs

import (
	"errors"
	"net/url"
	"sort"
	"strings"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Redacted replaces every secret value in the output of Redact and in errors.
const Redacted = config.RedactedValue

// IsSecretKey reports whether the value of the catalog property key is a secret
// (see config.IsSecretKey).
func IsSecretKey(key string) bool { return config.IsSecretKey(key) }

// Redact returns a copy of props that is safe to log or put in an error: the
// values of secret keys (see IsSecretKey) become Redacted, and passwords
// inside URIs and DSNs (postgres://u:pw@h/db, "password=pw") are replaced.
func Redact(props map[string]string) map[string]string { return config.Redacted(props) }

// RedactURI replaces the password of a URI's user info and secret-looking
// key=value pairs (password=..., token=...) in a DSN or query string.
func RedactURI(s string) string { return config.RedactURI(s) }

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
		for _, pw := range config.DSNSecrets(v) {
			add(pw)
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
// message, wrapping cause and the extra sentinels. The "iceberg: " of the cause's
// message (a ConfigError's, say) is left out: prefix has its own.
func wrapErr(props map[string]string, prefix string, cause error, sentinels ...error) error {
	msg := prefix
	if cause != nil {
		msg += ": " + config.Unprefixed(cause.Error())
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
