package catalogs

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/catalog/hive"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func openHadoop(name string, props map[string]string) (catalog.Catalog, error) {
	wh := props[KeyWarehouse]
	if wh == "" {
		return nil, config.Errorf(propKey(KeyWarehouse), "missing: the hadoop catalog needs a warehouse path")
	}
	return hadoop.NewCatalog(name, wh, ibg.Properties(cloneProps(props)))
}

// openGlue builds a Glue catalog from the glue.* properties (glue.region,
// glue.endpoint, glue.access-key-id, glue.secret-access-key, glue.session-token,
// glue.max-retries, glue.retry-mode, glue.id, ...) with the same AWS
// configuration iceberg-go's own loader derives from them.
func openGlue(ctx context.Context, props map[string]string) (catalog.Catalog, error) {
	p := ibg.Properties(cloneProps(props))
	awsCfg, err := glueAWSConfig(ctx, p)
	if err != nil {
		return nil, err
	}
	return glue.NewCatalog(glue.WithAwsConfig(awsCfg), glue.WithAwsProperties(glue.AwsProperties(p)))
}

func openHive(props map[string]string) (catalog.Catalog, error) {
	if props[KeyURI] == "" {
		return nil, config.Errorf(propKey(KeyURI), "missing: the hive catalog needs the metastore thrift URI")
	}
	return hive.NewCatalog(ibg.Properties(cloneProps(props)))
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
