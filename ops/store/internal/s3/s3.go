// Package s3 is the store on S3-compatible object storage (docs/store.md, "S3 stores"): `--store
// s3://BUCKET/PREFIX`. Its layout under PREFIX, the objects and the conditional writes that keep
// them, is docs/store.md's "What is in the bucket"; nothing under PREFIX/.attachctl is ever an id.
package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
	"github.com/attachctl/attachctl/ops/store/location"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// DefaultChunk is the part size unless told otherwise. S3 wants every part but the last to be at
// least MinChunk.
const (
	DefaultChunk = 8 << 20
	MinChunk     = 5 << 20
)

// internalDir is the store's own folder under PREFIX, its name every backend's.
const internalDir = store.InternalDir

// Store is one S3 store: a bucket and a prefix.
type Store struct {
	Bucket string
	Prefix string // without leading or trailing slash; may be empty
	URI    string // s3://BUCKET/PREFIX, normalised (location.S3)
	client *awss3.Client

	bufMu    sync.Mutex
	bufs     chan []byte // see buffers
	bufChunk int64

	// Its limits (limits.go), its Limiter: read from its mark object once; each upload is
	// admitted by a reservation taken under the store's limits lock.
	quota *store.Quota
	mark  store.ObjectMark // its mark, P/.attachctl/store
	// check tells once whether the prefix is a store (checkStore)
	check *store.MarkCheck
	// notes are the source-note rules over this store (noteStore, objects)
	notes store.Notes[*partialInfo]
	// removal is the sweep's order of deletion over this store's objects
	removal store.ObjectRemoval
	// up is the rules that read the store's uploads over its listings (list.go)
	up *store.ObjectUploads

	store.TreesOn // store.Trees: the engine's rules over the store (tree.go)
}

// Open connects to the S3 store at loc (location.ParseS3: its URI and options, resolved).
// Endpoint, region and credentials come the way AWS SDKs take them (AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL, AWS_REGION, the key variables, profiles). Nothing is sent to the server yet.
func Open(ctx context.Context, loc location.S3) (*Store, error) {
	// The SDK's own log lines (a credential source it fell back from) are not ours to print:
	// what goes wrong reaches the caller as an error.
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(logging.Nop{}))
	if err != nil {
		return nil, fault.Errorf(fault.StoreUnreachable, "store %s: AWS configuration: %v", loc.URI, err)
	}
	// AWS_MAX_ATTEMPTS, or max_attempts in the profile, unless told
	attempts := cmp.Or(loc.MaxAttempts, max(cfg.RetryMaxAttempts, 0), location.DefaultS3Attempts)
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = 5 * time.Second
			// A server found silent is not asked again by every request that follows; and a
			// refusal a posix-backed server makes while another request makes a folder of the
			// same path is transient.
			o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
				switch {
				case errors.Is(err, errGaveUp):
					return aws.FalseTernary
				case errCode(err) == "ExistingObjectIsDirectory":
					return aws.TrueTernary
				}
				return aws.UnknownTernary
			})}, o.Retryables...)
			// Throttling and 5xx retried without a token bucket running dry: a CLI run's
			// retries are bounded by the attempts.
			o.RateLimiter = ratelimit.None
		})
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers mostly ignore it; the SDK needs one to sign
	}
	// Parts go out in large writes: the default 4 KiB buffers cost a system call each.
	dialer := &net.Dialer{Timeout: loc.ConnectTimeout, KeepAlive: 30 * time.Second}
	idle := loc.ReadTimeout
	cfg.HTTPClient = &breaker{limit: attempts, c: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.WriteBufferSize = 256 << 10
		t.ReadBufferSize = 256 << 10
		t.MaxIdleConnsPerHost = 64
		t.TLSHandshakeTimeout = loc.ConnectTimeout
		t.ResponseHeaderTimeout = idle
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: idle}, nil
		}
	})}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		o.UsePathStyle = loc.PathStyle
		// Checksums only where S3 requires them: integrity is BLAKE3 end to end, and each part's
		// ETag is checked on resume.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	s := &Store{Bucket: loc.Bucket, Prefix: loc.Prefix, client: client, URI: loc.URI}
	s.mark = store.ObjectMark{O: objects{s}, Loc: s.URI, At: s.URI + "/" + internalDir + "/store", Make: func(ctx context.Context) error {
		_, err := s.checkStore(ctx, true)
		return err
	}}
	s.check = &store.MarkCheck{M: s.mark, Unsafe: loc.UnsafeNoConditional, Look: s.look, Nested: s.nested}
	s.quota = &store.Quota{R: store.ObjectReserver{O: objects{s}, Loc: s.URI, Lock: s.lockLimits}, M: s.mark, Loc: s.URI, MarkAt: s.mark.At, List: s.List, Wait: loc.LimitsWait}
	s.notes = store.Notes[*partialInfo]{B: noteStore{s}, O: objects{s}, Quota: s.quota}
	s.TreesOn = func(context.Context, bool) (store.TreeBackend, error) { return s, nil }
	s.up = s.uploads()
	s.removal = store.ObjectRemoval{O: objects{s}, HeadTree: s.headTree, DropNote: s.notes.Drop, DropMultiparts: s.dropMultiparts, Abort: s.abortStream,
		Walk: func(ctx context.Context, id string) ([]store.FolderObject, error) {
			l, err := s.up.WalkID(ctx, id)
			return l.Objects(), err
		},
		Delete: func(ctx context.Context, keys []string) error {
			full := make([]string, len(keys))
			for i, k := range keys {
				full[i] = s.key(k)
			}
			return s.deleteKeys(ctx, full)
		}}
	return s, nil
}

// unsignedPayload sends a body without its SHA-256 in the signature (UNSIGNED-PAYLOAD), so that
// neither side hashes every byte of a part once more: the bytes are checked by BLAKE3 end to end
// (verify), and a part resumed is checked by its ETag.
var unsignedPayload = awss3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)

// key is the object key of a path inside the store.
func (s *Store) key(parts ...string) string {
	k := strings.Join(parts, "/")
	if s.Prefix == "" {
		return k
	}
	return s.Prefix + "/" + k
}

// root is the key prefix every object of the store has.
func (s *Store) root() string {
	if s.Prefix == "" {
		return ""
	}
	return s.Prefix + "/"
}

// FinishedKey is the object of a finished upload.
func (s *Store) FinishedKey(id, name string) string { return s.key(id, name) }

// FinishedURI names a finished upload in records: s3://BUCKET/PREFIX/<id>/<name>.
func (s *Store) FinishedURI(id, name string) string {
	return "s3://" + s.Bucket + "/" + s.key(id, name)
}

func (s *Store) usedKey(id string) string { return s.key(id, store.UsedName) }

// errCode returns the S3 error code of err ("" when it is not an S3 answer).
func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// httpStatus returns the HTTP status of an S3 answer, 0 when there was none.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// notFound tells whether err says the key (or upload) is not there.
func notFound(err error) bool {
	switch errCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchUpload":
		return true
	}
	return httpStatus(err) == 404 && errCode(err) != "NoSuchBucket"
}

// conflict tells whether a conditional write lost: the condition failed or another conditional
// write to the key was in progress.
func conflict(err error) bool {
	if errCode(err) == "ExistingObjectIsDirectory" {
		return false // a transient refusal of a posix-backed server, not a condition that failed
	}
	switch httpStatus(err) {
	case 409, 412:
		return true
	}
	return errCode(err) == "PreconditionFailed" || errCode(err) == "ConditionalRequestConflict"
}

// wrap codes an error of a request about what (a key or an id): a server that cannot be reached,
// refuses the credentials or has no such bucket is store.unreachable with the server's own words;
// the rest is code.
func (s *Store) wrap(code fault.Code, what string, err error) error {
	if err == nil {
		return nil
	}
	if e := new(fault.Error); errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := err.Error()
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg = ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	switch st := httpStatus(err); {
	case st == 0 && errCode(err) == "",
		st == 401, st == 403, st >= 500,
		errCode(err) == "NoSuchBucket", errCode(err) == "InvalidAccessKeyId", errCode(err) == "SignatureDoesNotMatch":
		return fault.Errorf(fault.StoreUnreachable, "store %s: %s: %s", s.URI, what, msg)
	}
	return fault.Errorf(code, "store %s: %s: %s", s.URI, what, msg)
}

// Features: S3 names its uploads by URI and sends parts of at least MinChunk.
func (s *Store) Features() store.Features {
	return store.Features{Namer: s, Exister: s, Limiter: s.quota, Trees: s, Streamer: s,
		Chunk: DefaultChunk, LeastChunk: MinChunk}
}

// idleConn is a connection on which every read and write must move a byte within idle: the
// idle-read (and idle-write) timeout of every call, whatever its size.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(p)
}

// silent is a request the server did not answer in time, as Go's transport reports it when the
// wait for the answer's headers (ResponseHeaderTimeout) ran out: an error that is also
// context.DeadlineExceeded, which every caller takes for its own deadline and passes on without
// a code. It races the idle read's timeout of the same length (an "i/o timeout", which is not),
// so one run in a few came back uncoded, with no store named. It is the server's silence: a
// timeout, and not the caller's deadline.
type silent struct{ err error }

func (e silent) Error() string   { return e.err.Error() }
func (e silent) Timeout() bool   { return true }
func (e silent) Temporary() bool { return true }

// errGaveUp is a request not sent because the server stopped answering the ones before.
var errGaveUp = errors.New("not sent: the server stopped answering")

// breaker is the HTTP client of one Store: once one request has timed out on every attempt (its
// attempts share the SDK's amz-sdk-invocation-id), every later request fails at once with that
// timeout, so that a command over many uploads of a silent server gives up in the time of one.
// Timeouts of different requests at once (a stall while parts are in flight) are each retried.
type breaker struct {
	c     aws.HTTPClient
	limit int

	mu       sync.Mutex
	timeouts map[string]int // by invocation id, of requests not answered yet
	gaveUp   error          // the timeout that tripped it
}

func (b *breaker) Do(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	gaveUp := b.gaveUp
	b.mu.Unlock()
	if gaveUp != nil {
		return nil, fmt.Errorf("%w (%v)", errGaveUp, gaveUp)
	}
	resp, err := b.c.Do(r)
	if err != nil && r.Context().Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = silent{err}
	}
	inv := r.Header.Get("Amz-Sdk-Invocation-Id")
	var ne net.Error
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		delete(b.timeouts, inv)
	case errors.As(err, &ne) && ne.Timeout() && r.Context().Err() == nil:
		if b.timeouts == nil {
			b.timeouts = map[string]int{}
		}
		if b.timeouts[inv]++; b.timeouts[inv] >= b.limit {
			b.gaveUp = err
		}
	}
	return resp, err
}
