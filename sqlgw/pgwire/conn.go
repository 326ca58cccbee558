package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/netallow"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Startup packet codes.
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
	maxStartupPacket  = 10000
	// maxAuthMessage bounds messages before login (passwords, tokens, SASL).
	maxAuthMessage = 16 << 10
	// newestMinor is the newest protocol minor version served (3.2).
	newestMinor = 2
)

// conn is one client connection.
type conn struct {
	srv *Server
	id  uint64
	log *slog.Logger

	ctx  context.Context // ends when the connection ends or the server shuts down
	stop context.CancelCauseFunc

	mu      sync.Mutex
	netConn net.Conn                // the raw connection, then its TLS layer
	running context.CancelCauseFunc // cancels the statement being executed

	// gate and wait place the conn among those waiting to authenticate;
	// the Server's mutex guards them.
	gate *gate
	wait waiting

	// Set during startup, before other goroutines can see the conn by pid.
	pid      uint32
	secret   []byte
	admitted bool
	minor    uint32
	tls      bool
	// sessionStarted is set once SessionHooks.StartSession succeeded.
	sessionStarted bool
	serverCert     *tls.Certificate

	be       *pgproto3.Backend
	sess     *Session
	codec    *codec
	stmts    map[string]*prepared
	portals  map[string]*portal
	buffered int    // bytes sent since the last flush
	rowBuf   []byte // scratch for DataRow values
	rowOffs  []int
}

func newConn(s *Server, nc net.Conn) *conn {
	id := s.nextID.Add(1)
	ctx, stop := context.WithCancelCause(context.Background())
	return &conn{
		srv:     s,
		id:      id,
		log:     s.log.With("conn", id, "remote", nc.RemoteAddr().String()),
		ctx:     ctx,
		stop:    stop,
		netConn: nc,
		codec:   newCodec(),
		rowBuf:  make([]byte, 0, 512),
		stmts:   map[string]*prepared{},
		portals: map[string]*portal{},
	}
}

func (c *conn) nc() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.netConn
}

func (c *conn) setRunning(cancel context.CancelCauseFunc) {
	c.mu.Lock()
	c.running = cancel
	c.mu.Unlock()
}

func (c *conn) cancelRunning(cause error) {
	c.mu.Lock()
	r := c.running
	c.mu.Unlock()
	if r != nil {
		r(cause)
	}
}

// interrupt makes the connection end soon with 57P01 (server shutdown).
func (c *conn) interrupt() {
	c.stop(errShutdown)
	c.cancelRunning(errShutdown)
	c.nc().SetReadDeadline(time.Now())
}

// serve runs the connection to its end.
func (c *conn) serve() {
	defer c.srv.dropConn(c)
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic serving connection", "panic", r, "stack", string(debug.Stack()))
			if c.be != nil {
				c.be.Send(fatal(CodeInternalError, "internal error").response("FATAL"))
				c.be.Flush()
			}
		}
		c.closeAll()
		if c.sessionStarted {
			c.srv.opts.Engine.(SessionHooks).EndSession(c.sess)
		}
		c.stop(nil)
		c.nc().Close()
	}()
	deadline := time.Now().Add(c.srv.opts.StartupTimeout)
	c.nc().SetDeadline(deadline)
	sctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	ok, err := c.startup(sctx)
	if err != nil {
		c.sendFatal(err)
		return
	}
	if !ok {
		return
	}
	c.nc().SetDeadline(time.Time{})
	c.log = c.log.With("user", c.sess.User)
	c.log.Debug("pgwire: session started", "database", c.sess.Database, "tls", c.tls, "method", c.sess.Identity.Method)
	c.loop()
}

// sendFatal reports a connection-ending error; other errors are logged and
// the connection is just closed.
func (c *conn) sendFatal(err error) {
	var pe *Error
	if !errors.As(err, &pe) || pe.Severity != "FATAL" {
		if cause := context.Cause(c.ctx); cause != nil { // evicted or shutting down
			c.log.Debug("pgwire: connection ended during startup", "cause", cause, "err", err)
			return
		}
		if isClosed(err) {
			c.log.Debug("pgwire: connection closed during startup", "err", err)
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.log.Info("pgwire: startup timed out")
			return
		}
		c.log.Error("pgwire: startup failed", "err", err)
		pe = fatal(CodeInternalError, "internal error")
	}
	if pe.Code == CodeInvalidPassword || pe.Code == CodeInvalidAuthorization {
		c.log.Info("pgwire: login refused", "code", pe.Code, "reason", pe.Error())
	}
	if c.be != nil {
		c.be.Send(pe.response("FATAL"))
		c.be.Flush()
		return
	}
	if msg, err := pe.response("FATAL").Encode(nil); err == nil {
		c.nc().Write(msg)
	}
}

// isClosed reports whether err means the peer went away.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, errClientGone) || strings.Contains(err.Error(), "connection reset")
}

var errClientGone = errors.New("client connection lost")

// readStartupPacket reads one length-prefixed startup packet with exact
// reads, so nothing sent after an SSLRequest is buffered as plaintext.
func (c *conn) readStartupPacket() (uint32, []byte, error) {
	nc := c.nc()
	var hdr [4]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 8 || n > maxStartupPacket {
		return 0, nil, fatal(CodeProtocolViolation, "invalid length of startup packet")
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(nc, body); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(body), body[4:], nil
}

// startup negotiates encryption, reads the startup message, admits and
// authenticates the session. ok is false for a connection that ended
// without a session (a cancel request).
func (c *conn) startup(ctx context.Context) (ok bool, err error) {
	sslTried, gssTried := false, false
	for {
		code, body, err := c.readStartupPacket()
		if err != nil {
			return false, err
		}
		switch code {
		case sslRequestCode:
			if sslTried || c.tls {
				return false, fatal(CodeProtocolViolation, "unexpected SSLRequest")
			}
			sslTried = true
			if err := c.startTLS(ctx); err != nil {
				return false, err
			}
		case gssEncRequestCode:
			if gssTried || c.tls {
				return false, fatal(CodeProtocolViolation, "unexpected GSSENCRequest")
			}
			gssTried = true
			if _, err := c.nc().Write([]byte{'N'}); err != nil {
				return false, err
			}
		case cancelRequestCode:
			if len(body) < 8 || len(body) > 4+256 {
				return false, nil
			}
			c.srv.cancel(binary.BigEndian.Uint32(body), body[4:])
			return false, nil
		default:
			if code>>16 != 3 {
				return false, fatal(CodeFeatureNotSupported, fmt.Sprintf(
					"unsupported frontend protocol %d.%d: server supports 3.0 to 3.%d", code>>16, code&0xffff, newestMinor))
			}
			return true, c.login(ctx, code&0xffff, body)
		}
	}
}

// startTLS answers an SSLRequest.
func (c *conn) startTLS(ctx context.Context) error {
	nc := c.nc()
	cfg := c.srv.opts.TLSConfig
	if cfg == nil {
		_, err := nc.Write([]byte{'N'})
		return err
	}
	if _, err := nc.Write([]byte{'S'}); err != nil {
		return err
	}
	tc := tls.Server(nc, c.tlsConfig(cfg))
	if err := tc.HandshakeContext(ctx); err != nil {
		c.log.Info("pgwire: TLS handshake failed", "err", err)
		return errClientGone
	}
	c.mu.Lock()
	c.netConn = tc
	c.mu.Unlock()
	c.tls = true
	return nil
}

// tlsConfig clones base so that the connection learns which certificate it
// presented, for tls-server-end-point channel binding. It selects the
// certificate as crypto/tls does.
func (c *conn) tlsConfig(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	if base.GetConfigForClient != nil {
		return cfg // the certificate cannot be known; no channel binding
	}
	cfg.Certificates = nil
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, err := pickCertificate(base, hello)
		c.serverCert = cert
		return cert, err
	}
	return cfg
}

func pickCertificate(base *tls.Config, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if base.GetCertificate != nil && (len(base.Certificates) == 0 || hello.ServerName != "") {
		cert, err := base.GetCertificate(hello)
		if cert != nil || err != nil {
			return cert, err
		}
	}
	switch len(base.Certificates) {
	case 0:
		return nil, errors.New("pgwire: no TLS certificate configured")
	case 1:
		return &base.Certificates[0], nil
	}
	for i := range base.Certificates {
		if hello.SupportsCertificate(&base.Certificates[i]) == nil {
			return &base.Certificates[i], nil
		}
	}
	return &base.Certificates[0], nil
}

// parseStartupParams decodes name\0value\0...\0.
func parseStartupParams(b []byte) (map[string]string, error) {
	params := map[string]string{}
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, fatal(CodeProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
		}
		if i == 0 {
			if len(b) != 1 {
				return nil, fatal(CodeProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
			}
			return params, nil
		}
		name := string(b[:i])
		b = b[i+1:]
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return nil, fatal(CodeProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
		}
		params[name] = string(b[:j])
		b = b[j+1:]
	}
}

// parseOptions splits the "options" startup parameter as PostgreSQL does
// (white space separates, backslash escapes) and returns its -c name=value
// and --name=value settings.
func parseOptions(s string) (map[string]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inArg = true
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(ch)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c" && i+1 < len(args):
			i++
			kv = args[i]
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			kv = a[2:]
		case strings.HasPrefix(a, "--") && len(a) > 2:
			kv = strings.ReplaceAll(a[2:], "-", "_")
		default:
			return nil, fatal(CodeInvalidParameterValue, fmt.Sprintf("invalid command-line argument for server process: %s", a))
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fatal(CodeInvalidParameterValue, fmt.Sprintf("invalid command-line argument for server process: %s", a))
		}
		out[strings.ReplaceAll(name, "-", "_")] = value
	}
	return out, nil
}

// login handles a StartupMessage of protocol 3.minor.
func (c *conn) login(ctx context.Context, minor uint32, body []byte) error {
	params, err := parseStartupParams(body)
	if err != nil {
		return err
	}
	opts := c.srv.opts
	client := netallow.AddrOf(c.nc().RemoteAddr())
	if opts.CheckClient != nil {
		if err := opts.CheckClient(ctx, client); err != nil {
			return fatal(CodeInvalidAuthorization, floe.PublicMessage(err))
		}
	}
	ctx = netallow.WithClient(ctx, client)
	if opts.RequireTLS && !c.tls {
		return fatal(CodeInvalidAuthorization, "connection requires TLS (sslmode=require)")
	}
	user := params["user"]
	if user == "" {
		return fatal(CodeInvalidAuthorization, "no PostgreSQL user name specified in startup packet")
	}
	if r := params["replication"]; r != "" && !strings.EqualFold(r, "false") && !strings.EqualFold(r, "off") && r != "0" {
		return fatal(CodeFeatureNotSupported, "replication connections are not supported")
	}
	limitKey := loginKey(user, c.nc().RemoteAddr())
	if retry, first, blocked := c.srv.limiter.Blocked(limitKey); blocked {
		secs := max(1, int(math.Ceil(retry.Seconds())))
		if first {
			c.log.Info("pgwire: logins throttled after failed attempts", "user", user)
		}
		e := fatal(CodeLoginThrottled, fmt.Sprintf("too many failed login attempts for user %q from this address; try again in %d s", user, secs))
		e.Hint = "Wait, then log in with the right password or token."
		return e
	}
	sess := newSession()
	sess.ID = c.id
	sess.User = user
	sess.Database = params["database"]
	if sess.Database == "" {
		sess.Database = user
	}
	sess.RemoteAddr = c.nc().RemoteAddr()
	sess.TLS = c.tls
	for k, v := range map[string]string{
		"server_version": opts.ServerVersion, "server_encoding": "UTF8", "client_encoding": "UTF8",
		"DateStyle": "ISO, MDY", "IntervalStyle": "postgres", "TimeZone": "UTC",
		"integer_datetimes": "on", "standard_conforming_strings": "on", "is_superuser": "off",
		"session_authorization": user, "default_transaction_read_only": "off", "in_hot_standby": "off",
		"application_name": "",
	} {
		if err := sess.SetSetting(k, v); err != nil {
			return err
		}
	}
	// Settings from the startup message: "options" first, then the rest.
	settings := map[string]string{}
	if o := params["options"]; o != "" {
		if settings, err = parseOptions(o); err != nil {
			return err
		}
	}
	var unrecognized []string
	for k, v := range params {
		switch {
		case k == "user" || k == "database" || k == "options" || k == "replication":
		case strings.HasPrefix(k, "_pq_."):
			unrecognized = append(unrecognized, k)
		default:
			settings[k] = v
		}
	}
	for k, v := range settings {
		if err := sess.SetSetting(k, v); err != nil {
			pe, _ := publicError(err)
			return &Error{Severity: "FATAL", Code: pe.Code, Message: pe.Message, Hint: pe.Hint}
		}
	}
	if c.srv.closing.Load() {
		return fatal(CodeCannotConnectNow, "the database system is shutting down")
	}
	// Protocol 3.1 was never defined; answer it and anything newer than
	// 3.2 with the version served.
	c.minor = min(minor, newestMinor)
	if c.minor == 1 {
		c.minor = 0
	}
	keyLen := 4
	if c.minor >= 2 {
		keyLen = 32
	}
	c.sess = sess

	nc := c.nc()
	c.be = pgproto3.NewBackend(nc, nc)
	c.be.SetMaxBodyLen(min(maxAuthMessage, opts.MaxMessageSize))
	if c.minor != minor || len(unrecognized) > 0 {
		c.be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: c.minor, UnrecognizedOptions: unrecognized})
	}
	id, err := c.authenticate(ctx, user)
	if err != nil {
		if pe := (*Error)(nil); errors.As(err, &pe) && pe.Code == CodeInvalidPassword {
			c.srv.limiter.Fail(limitKey)
		}
		return err
	}
	// The principal's allowlist, checked only once its password or token
	// proved who it is (an outsider learns nothing about other users).
	if !netallow.ContainsAny(id.AllowedCIDRs, client) {
		return fatal(CodeInvalidAuthorization, floe.PublicMessage(netallow.DeniedPrincipal(client, id.Principal)))
	}
	// Only an authenticated client takes a session slot: clients stalled
	// at the password prompt wait in the listener's gate instead.
	admitted, err := c.srv.admit(c, keyLen)
	if err != nil {
		return err
	}
	if !admitted {
		return fatal(CodeTooManyConnections, "sorry, too many clients already")
	}
	sess.ProcessID = c.pid
	sess.Identity = id
	// The startup deadline bounds what the client does; opening the
	// session is the server's work (slow under load), bounded by shutdown.
	nc.SetDeadline(time.Time{})
	if hooks, ok := opts.Engine.(SessionHooks); ok {
		if err := hooks.StartSession(c.ctx, sess); err != nil {
			pe, internal := publicError(err)
			if internal {
				c.log.Error("pgwire: engine refused session", "err", err)
			}
			return &Error{Severity: "FATAL", Code: pe.Code, Message: pe.Message, Detail: pe.Detail, Hint: pe.Hint}
		}
		c.sessionStarted = true
	}
	c.be.SetMaxBodyLen(opts.MaxMessageSize)
	c.be.Send(&pgproto3.AuthenticationOk{})
	for _, p := range sess.changedReported() {
		c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: byte(TxIdle)})
	if err := c.be.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// authenticate runs SCRAM for users with a verifier and token login for
// the others, and returns the caller's identity.
func (c *conn) authenticate(ctx context.Context, user string) (Identity, error) {
	auth := c.srv.opts.Authenticator
	failed := fatal(CodeInvalidPassword, fmt.Sprintf("password authentication failed for user %q", user))
	v, id, ok, err := auth.SCRAMVerifier(ctx, user)
	if err != nil {
		if ctx.Err() != nil { // evicted, timed out or shutting down
			return Identity{}, err
		}
		c.log.Error("pgwire: SCRAM verifier lookup", "err", err)
		return Identity{}, fatal(CodeInternalError, "internal error during authentication")
	}
	if ok {
		if err := c.scram(v); err != nil {
			if errors.Is(err, errSCRAM) {
				return Identity{}, failed
			}
			return Identity{}, err
		}
		id.Method = AuthSCRAM
		return id, nil
	}
	if !c.tls && !isLocal(c.nc().RemoteAddr()) {
		e := fatal(CodeInvalidAuthorization, "token login requires TLS")
		e.Hint = "Connect with sslmode=require, or log in with a SCRAM password."
		return Identity{}, e
	}
	c.be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if err := c.be.Flush(); err != nil {
		return Identity{}, errClientGone
	}
	c.be.SetAuthType(pgproto3.AuthTypeCleartextPassword)
	msg, err := c.be.Receive()
	if err != nil {
		return Identity{}, receiveErr(err)
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return Identity{}, fatal(CodeProtocolViolation, fmt.Sprintf("expected password response, got %T", msg))
	}
	c.be.SetAuthType(pgproto3.AuthTypeOk)
	id, err = auth.Token(ctx, user, pm.Password)
	if err != nil {
		switch {
		case errors.Is(err, ErrBadCredentials):
		case floe.KindOf(err) == floe.Forbidden && floe.EntityOf(err) == "network":
			// A valid token used from outside its principal's allowlist.
			return Identity{}, fatal(CodeInvalidAuthorization, floe.PublicMessage(err))
		case floe.KindOf(err) == floe.Unauthenticated || floe.KindOf(err) == floe.Forbidden || floe.KindOf(err) == floe.NotFound:
		case ctx.Err() != nil: // evicted, timed out or shutting down
			return Identity{}, err
		default:
			c.log.Error("pgwire: token check", "err", err)
			return Identity{}, fatal(CodeInternalError, "internal error during authentication")
		}
		return Identity{}, failed
	}
	if id.Principal != user {
		c.log.Info("pgwire: token principal differs from user name", "principal", id.Principal)
		return Identity{}, failed
	}
	id.Method = AuthToken
	return id, nil
}

// scram runs the SASL exchange; errSCRAM means bad credentials.
func (c *conn) scram(v *ScramVerifier) error {
	ss := &scramServer{v: v}
	if c.tls {
		ss.cbData = certEndPoint(c.serverCert)
	}
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: ss.mechanisms()})
	if err := c.be.Flush(); err != nil {
		return errClientGone
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := c.be.Receive()
	if err != nil {
		return receiveErr(err)
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return fatal(CodeProtocolViolation, fmt.Sprintf("expected SASL response, got %T", msg))
	}
	first, err := ss.first(init.AuthMechanism, init.Data)
	if err != nil {
		return err
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: first})
	if err := c.be.Flush(); err != nil {
		return errClientGone
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	msg, err = c.be.Receive()
	if err != nil {
		return receiveErr(err)
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fatal(CodeProtocolViolation, fmt.Sprintf("expected SASL response, got %T", msg))
	}
	final, err := ss.final(resp.Data)
	if err != nil {
		return err
	}
	c.be.SetAuthType(pgproto3.AuthTypeOk)
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: final})
	return nil
}

// receiveErr classifies an error from Backend.Receive.
func receiveErr(err error) error {
	var big *pgproto3.ExceededMaxBodyLenErr
	switch {
	case errors.As(err, &big):
		return fatal(CodeProtocolViolation, fmt.Sprintf("message of %d bytes exceeds the limit of %d", big.ActualBodyLen, big.MaxExpectedBodyLen))
	case isClosed(err):
		return errClientGone
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return fatal(CodeProtocolViolation, "invalid frontend message: "+err.Error())
}

// isLocal reports whether a is a loopback or Unix-socket peer.
func isLocal(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}
