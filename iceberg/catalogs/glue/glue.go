// Package glue registers icebeam's glue catalog type: the AWS Glue Data
// Catalog through iceberg-go, configured by the glue.* catalog properties. It
// links the AWS SDK. Import it for its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/glue"
//
// A pipeline whose catalog_properties name type=glue without this import
// fails at construction with an error naming it. Tables on s3:// also need
// github.com/icebeam/icebeam/iceberg/storage/s3.
package glue

import (
	"context"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

func init() { registry.Register("glue", open) }

// propKey is the managed-config key of catalog property k, used in ConfigErrors.
func propKey(k string) string { return "catalog_properties." + k }

// open builds a Glue catalog from the glue.* properties (glue.region,
// glue.endpoint, glue.access-key-id, glue.secret-access-key, glue.session-token,
// glue.max-retries, glue.retry-mode, glue.id, ...) with the same AWS
// configuration iceberg-go's own loader derives from them.
func open(ctx context.Context, _ string, props map[string]string) (catalog.Catalog, error) {
	p := ibg.Properties(maps.Clone(props))
	awsCfg, err := glueAWSConfig(ctx, p)
	if err != nil {
		return nil, err
	}
	return glue.NewCatalog(glue.WithAwsConfig(awsCfg), glue.WithAwsProperties(glue.AwsProperties(p)))
}

// glueAWSConfig mirrors iceberg-go's Glue loader: region, endpoint, retries
// and static credentials from glue.* properties, the rest from the AWS
// default chain.
func glueAWSConfig(ctx context.Context, p ibg.Properties) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if v := p[glue.Region]; v != "" {
		opts = append(opts, awsconfig.WithRegion(v))
	}
	if v := p[glue.Endpoint]; v != "" {
		opts = append(opts, awsconfig.WithBaseEndpoint(v))
	}
	if v := p[glue.MaxRetries]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return aws.Config{}, config.Errorf(propKey(glue.MaxRetries), "must be a positive integer, got %q", v)
		}
		opts = append(opts, awsconfig.WithRetryMaxAttempts(n))
	}
	if v := p[glue.RetryMode]; v != "" {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, config.Errorf(propKey(glue.RetryMode), "invalid retry mode %q", v)
		}
		opts = append(opts, awsconfig.WithRetryMode(m))
	}
	key, secret, token := p[glue.AccessKeyID], p[glue.SecretAccessKey], p[glue.SessionToken]
	switch {
	case key == "" && secret == "" && token != "":
		return aws.Config{}, config.Errorf(propKey(glue.SessionToken), "requires %s and %s", glue.AccessKeyID, glue.SecretAccessKey)
	case (key == "") != (secret == ""):
		return aws.Config{}, config.Errorf(propKey(glue.AccessKeyID), "%s and %s must be set together", glue.AccessKeyID, glue.SecretAccessKey)
	case key != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, secret, token)))
	}
	return awsconfig.LoadDefaultConfig(ctx, opts...)
}
