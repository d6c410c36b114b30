package catalogs

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

// GoogleCloudPlatformScope is the OAuth2 scope of the Google ADC token sent to
// REST catalogs with rest.auth.type=google.
const GoogleCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// REST authentication types accepted in rest.auth.type.
const (
	RESTAuthOAuth2 = "oauth2"
	RESTAuthGoogle = "google"
	RESTAuthNone   = "none"
)

// The rest catalog is always linked: it is what BigLake and most shared
// catalogs speak.
func init() {
	registry.Register(TypeREST, func(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error) {
		return openREST(ctx, name, props)
	})
}

func openREST(ctx context.Context, name string, props map[string]string) (*rest.Catalog, error) {
	uri := props[KeyURI]
	if uri == "" {
		return nil, config.Errorf(propKey(KeyURI), "missing: the rest catalog needs the server's base URI")
	}
	if u, err := url.Parse(uri); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, config.Errorf(propKey(KeyURI), "must be an http or https URL, got %q", RedactURI(uri))
	}
	opts, err := restOptions(ctx, props)
	if err != nil {
		return nil, err
	}
	return rest.NewCatalog(ctx, name, uri, opts...)
}

// restOptions maps catalog properties to rest.Options. Every property other
// than type and uri is also passed through, so iceberg-go sees the same keys
// as its own property parser would.
func restOptions(ctx context.Context, props map[string]string) ([]rest.Option, error) {
	extra := ibg.Properties{}
	headers := map[string]string{}
	for k, v := range props {
		switch k {
		case KeyType, KeyURI, KeyRESTAuthType:
			continue
		}
		extra[k] = v
		if h, ok := strings.CutPrefix(k, HeaderPrefix); ok && h != "" {
			headers[h] = v
		}
	}
	opts := []rest.Option{rest.WithAdditionalProps(extra)}
	if len(headers) > 0 {
		opts = append(opts, rest.WithHeaders(headers))
	}
	set := func(key string, o func(string) rest.Option) {
		if v := props[key]; v != "" {
			opts = append(opts, o(v))
		}
	}
	set(KeyWarehouse, rest.WithWarehouseLocation)
	set("scope", rest.WithScope)
	set("audience", rest.WithAudience)
	set("resource", rest.WithResource)
	set("prefix", rest.WithPrefix)
	set("metadata_location", rest.WithMetadataLocation)
	for _, k := range []string{"rest.authorization-url", "oauth2-server-uri"} { // the latter wins
		if v := props[k]; v != "" {
			u, err := url.Parse(v)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return nil, config.Errorf(propKey(k), "must be an absolute URL, got %q", RedactURI(v))
			}
			opts = append(opts, rest.WithAuthURI(u))
		}
	}
	if v := props["rest.sigv4-enabled"]; v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, config.Errorf(propKey("rest.sigv4-enabled"), "must be true or false, got %q", v)
		}
		if on {
			svc := props["rest.signing-name"]
			if svc == "" {
				svc = "execute-api"
			}
			opts = append(opts, rest.WithSigV4RegionSvc(props["rest.signing-region"], svc))
		}
	}
	if v := props["rest.tls.skip-verify"]; v != "" {
		skip, err := strconv.ParseBool(v)
		if err != nil {
			return nil, config.Errorf(propKey("rest.tls.skip-verify"), "must be true or false, got %q", v)
		}
		opts = append(opts, rest.WithTLSConfig(&tls.Config{InsecureSkipVerify: skip})) //nolint:gosec // user's explicit choice
	}

	switch auth := strings.ToLower(props[KeyRESTAuthType]); auth {
	case "", RESTAuthOAuth2:
		set("credential", rest.WithCredential)
		set("token", rest.WithOAuthToken)
	case RESTAuthNone:
		if props["credential"] != "" || props["token"] != "" {
			return nil, config.Errorf(propKey(KeyRESTAuthType), "%q contradicts the credential/token properties", auth)
		}
	case RESTAuthGoogle:
		if props["credential"] != "" || props["token"] != "" {
			return nil, config.Errorf(propKey(KeyRESTAuthType), "%q cannot be combined with the credential/token properties", auth)
		}
		am, err := NewGoogleAuthManager(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, rest.WithAuthManager(am))
	default:
		return nil, config.Errorf(propKey(KeyRESTAuthType), "unknown value %q; supported: %s, %s, %s",
			props[KeyRESTAuthType], RESTAuthOAuth2, RESTAuthGoogle, RESTAuthNone)
	}
	return opts, nil
}

// GoogleAuthManager is a rest.AuthManager that sends a Google Application
// Default Credentials access token (scope cloud-platform) as the bearer token
// of every REST catalog request, as BigLake's Iceberg REST catalog requires.
// Tokens are cached and refreshed before they expire.
type GoogleAuthManager struct {
	ts oauth2.TokenSource // safe for concurrent use
}

var _ rest.ContextAuthManager = (*GoogleAuthManager)(nil)

// NewGoogleAuthManager finds the Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, or the metadata server).
// Token refreshes outlive ctx's cancellation but keep its values.
func NewGoogleAuthManager(ctx context.Context) (*GoogleAuthManager, error) {
	ts, err := google.DefaultTokenSource(context.WithoutCancel(ctx), GoogleCloudPlatformScope)
	if err != nil {
		return nil, fmt.Errorf("google application default credentials: %w", err)
	}
	return &GoogleAuthManager{ts: oauth2.ReuseTokenSource(nil, ts)}, nil
}

// AuthHeader returns the Authorization header with a current ADC token.
func (g *GoogleAuthManager) AuthHeader() (string, string, error) {
	tok, err := g.ts.Token()
	if err != nil {
		return "", "", fmt.Errorf("%w: google application default credentials: %w", rest.ErrOAuthError, err)
	}
	return "Authorization", tok.Type() + " " + tok.AccessToken, nil
}

// AuthHeaderWithContext is AuthHeader that gives up when ctx is done.
func (g *GoogleAuthManager) AuthHeaderWithContext(ctx context.Context) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	return g.AuthHeader()
}

// cloneProps copies props (nil stays an empty map).
func cloneProps(props map[string]string) map[string]string {
	if props == nil {
		return map[string]string{}
	}
	return maps.Clone(props)
}
