package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/floe-lake/floe/internal/app"
)

// tlsFlags declares the serve flags of TLS (app.Config's TLS settings) and
// returns a function that applies those set on the command line.
func tlsFlags(fs *pflag.FlagSet) func(*app.Config) {
	cert := fs.String("tls-cert", "", "PEM certificate (with chain) every listener serves: REST catalog, S3 and SQL endpoints; re-read when it changes (env FLOE_TLS_CERT)")
	key := fs.String("tls-key", "", "PEM private key of --tls-cert (env FLOE_TLS_KEY)")
	self := fs.Bool("tls-self-signed", false, "make (once) a local CA and certificate in <data-dir>/tls and serve TLS with it; development only (env FLOE_TLS_SELF_SIGNED)")
	clientCA := fs.String("tls-client-ca", "", "PEM CA certificates that issue client certificates (env FLOE_TLS_CLIENT_CA)")
	restAuth := fs.String("rest-tls-client-auth", "", "client certificates on the REST catalog listener: off, optional or require (env FLOE_REST_TLS_CLIENT_AUTH)")
	s3Auth := fs.String("s3-tls-client-auth", "", "client certificates on the S3 listener: off, optional or require (env FLOE_S3_TLS_CLIENT_AUTH)")
	return func(cfg *app.Config) {
		for name, set := range map[string]func(){
			"tls-cert":             func() { cfg.TLSCert = *cert },
			"tls-key":              func() { cfg.TLSKey = *key },
			"tls-self-signed":      func() { cfg.TLSSelfSigned = *self },
			"tls-client-ca":        func() { cfg.TLSClientCA = *clientCA },
			"rest-tls-client-auth": func() { cfg.RESTTLSClientAuth = *restAuth },
			"s3-tls-client-auth":   func() { cfg.S3TLSClientAuth = *s3Auth },
		} {
			if fs.Changed(name) {
				set()
			}
		}
	}
}

// printTrust tells how to trust the CA of --tls-self-signed.
func printTrust(w io.Writer, a *app.App) {
	ca := a.TLSCAFile()
	if ca == "" {
		return
	}
	made := "reused"
	if a.TLSCACreated() {
		made = "created"
	}
	fmt.Fprintf(w, `
TLS with a self-signed local CA (%s): %s
  Trust it (development machines only):
    curl:      curl --cacert %s %s/v1/config
    PyIceberg: load_catalog("floe", uri=%q, ssl={"cabundle": %q}, ...)
               and SSL_CERT_FILE=%s for the data files (pyarrow), AWS_CA_BUNDLE=%s for boto3
    Java:      keytool -importcert -noprompt -alias floe-local-ca -file %s -keystore floe-truststore.p12 -storepass changeit
               then -Djavax.net.ssl.trustStore=floe-truststore.p12 -Djavax.net.ssl.trustStorePassword=changeit
    psql:      psql "postgres://<principal>@%s/%s?sslmode=verify-full&sslrootcert=%s"
`, made, ca, ca, a.URL(), a.URL(), ca, ca, ca, ca, a.SQLAddr(), a.Config().Warehouse, ca)
}
