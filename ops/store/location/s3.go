package location

import (
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The rules of an s3:// location, written once above the S3 backend, which keeps only their AWS
// wiring: what an s3:// location names, the options it is opened with, their defaults and the
// variables that set them, and what is refused (upload.invalid, before anything is sent).

// S3Options are the options of an S3 store (the command's --s3-* flags; ops/store/open's
// S3Options).
type S3Options struct {
	// PathStyle addresses the bucket in the path (http://host/bucket/key), which most servers
	// other than AWS need. Also set by ATTACHCTL_S3_PATH_STYLE=1.
	PathStyle bool
	// UnsafeNoConditional uses a server that ignores If-None-Match and If-Match, which is
	// refused otherwise: unsafe, since the create-only finish and the marker protocol depend on
	// them (two uploads, or a use racing a sweep, can then lose data).
	UnsafeNoConditional bool
	// MaxAttempts is how often a request is tried on 5xx answers, throttling, broken
	// connections, timeouts and transient refusals; 0 is AWS_MAX_ATTEMPTS (or the profile's
	// max_attempts), else DefaultS3Attempts.
	MaxAttempts int
	// ConnectTimeout bounds making a connection; 0 is ATTACHCTL_S3_CONNECT_TIMEOUT, else
	// DefaultS3ConnectTimeout.
	ConnectTimeout time.Duration
	// ReadTimeout bounds how long a connection may go without a byte moving either way; 0 is
	// ATTACHCTL_S3_READ_TIMEOUT, else DefaultS3ReadTimeout.
	ReadTimeout time.Duration
}

// The S3 defaults: with the standard three attempts and these timeouts, a server that accepts a
// connection and never answers is store.unreachable in under a minute.
const (
	DefaultS3Attempts       = 3
	DefaultS3ConnectTimeout = 10 * time.Second
	DefaultS3ReadTimeout    = 15 * time.Second
)

// S3 is an s3://BUCKET/PREFIX location and the options it is opened with, resolved (ParseS3).
type S3 struct {
	Bucket string
	Prefix string // without leading or trailing slash; may be empty
	URI    string // s3://BUCKET/PREFIX, normalised
	// The options with the variables and defaults applied: PathStyle and UnsafeNoConditional as
	// given or set, both timeouts above zero; MaxAttempts is 0 when neither it nor a variable
	// says (the AWS profile's max_attempts then, which only the backend reads, else
	// DefaultS3Attempts).
	S3Options
	// LimitsWait is open.Options' (0: store.DefaultLimitsWait).
	LimitsWait time.Duration
}

// ParseS3 reads the location uri (s3://BUCKET/PREFIX: no user, port, query or fragment, no
// empty, . or .. part in PREFIX) and resolves o from the environment and the defaults. A bad
// location or a variable that is no timeout is upload.invalid.
func ParseS3(uri string, o S3Options) (S3, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return S3{}, fault.Errorf(fault.UploadInvalid, "store %q: not s3://BUCKET/PREFIX", uri)
	}
	// Someone who writes credentials or a server into the location means them: say where they go
	// rather than only that the form is wrong, and keep the secret out of the error (it reaches
	// stderr and the manifest).
	if u.User != nil {
		return S3{}, fault.Errorf(fault.UploadInvalid, "store %q: not s3://BUCKET/PREFIX: credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE, not the location", u.Redacted())
	}
	if u.Hostname() != u.Host {
		return S3{}, fault.Errorf(fault.UploadInvalid, "store %q: not s3://BUCKET/PREFIX: the server comes from AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL), not the location", uri)
	}
	l := S3{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"), S3Options: o}
	for _, part := range strings.Split(l.Prefix, "/") {
		if l.Prefix != "" && (part == "" || part == "." || part == "..") {
			return S3{}, fault.Errorf(fault.UploadInvalid, "store %q: the prefix has an empty, . or .. part", uri)
		}
	}
	l.URI = strings.TrimSuffix("s3://"+l.Bucket+"/"+l.Prefix, "/")
	l.PathStyle = l.PathStyle || os.Getenv("ATTACHCTL_S3_PATH_STYLE") == "1"
	l.MaxAttempts = max(l.MaxAttempts, 0)
	for _, t := range []struct {
		d   *time.Duration
		env string
		def time.Duration
	}{{&l.ConnectTimeout, "ATTACHCTL_S3_CONNECT_TIMEOUT", DefaultS3ConnectTimeout}, {&l.ReadTimeout, "ATTACHCTL_S3_READ_TIMEOUT", DefaultS3ReadTimeout}} {
		if *t.d > 0 {
			continue
		}
		*t.d = t.def
		if v := os.Getenv(t.env); v != "" {
			d, ok := ParseTimeout(v)
			if !ok {
				return S3{}, fault.Errorf(fault.UploadInvalid, "%s=%q: not a duration (30s, 1m, or seconds)", t.env, v)
			}
			*t.d = d
		}
	}
	return l, nil
}

// ParseTimeout reads a timeout as the flags and variables take it: Go's syntax, or seconds as the
// AWS CLI takes its timeouts; false when it is neither, or not above zero.
func ParseTimeout(v string) (time.Duration, bool) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(n * float64(time.Second)), n > 0
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d > 0
}
