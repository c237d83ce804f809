package devstack

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/sshproxy"
	"go.uber.org/zap"
)

// How long the stand-in's codes and tokens live (UAA's codes live minutes; its tokens more).
const (
	devCodeLifetime   = 5 * time.Minute
	devTokenLifetime  = time.Hour
	devMaxOutstanding = 1000
)

// devCF stands in, for `cf ssh`, for the two parts of Cloud Foundry the proxy's cf
// authenticator speaks to, on one loopback port:
//
//   - UAA: GET /oauth/authorize?response_type=code&client_id=ssh-proxy with the dev user's
//     bearer token answers a redirect carrying a one-time code (what `cf ssh-code` asks),
//     and POST /oauth/token exchanges a code, once, for a token, for the proxy's client only.
//   - Cloud Controller: GET /internal/apps/<app_guid>/ssh_access/<index> with such a token
//     answers the process guid of the LRP whose log_guid is the app guid (Cloud Controller
//     sets log_guid to the app guid), 404 when there is none, 401 without a valid token.
//
// The dev stack has one user, its operator: every valid token may ssh into every app.
type devCF struct {
	srv *http.Server
	URL string
	// clientSecret is the proxy's UAA client's; userToken is the dev user's, kept in files
	// readable by the operator alone, as the proxy's password is.
	clientSecret, userToken string
	// processFor finds the process guid of an app guid ("" when there is none).
	processFor func(ctx context.Context, appGUID string) (string, error)
	now        func() time.Time

	mu     sync.Mutex
	codes  map[string]time.Time // outstanding codes and when they expire
	tokens map[string]time.Time
}

// Files under <data>/ssh the stand-in keeps: the URL `bbs ssh-code` asks, the dev user's
// token it presents, and the proxy's UAA client secret.
const (
	uaaURLFile          = "uaa_url"
	uaaUserTokenFile    = "uaa_user_token"
	uaaClientSecretFile = "uaa_client_secret"
)

// startDevCF serves the stand-in on a loopback port of its own, with the secrets kept under
// sshDir, and writes its URL there for `bbs ssh-code`.
func startDevCF(sshDir string, processFor func(context.Context, string) (string, error), log *zap.Logger) (*devCF, error) {
	secret, err := keepFile(filepath.Join(sshDir, uaaClientSecretFile), newPassword)
	if err != nil {
		return nil, err
	}
	userToken, err := keepFile(filepath.Join(sshDir, uaaUserTokenFile), newPassword)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &devCF{URL: "http://" + ln.Addr().String(), clientSecret: secret, userToken: userToken, processFor: processFor,
		now: time.Now, codes: map[string]time.Time{}, tokens: map[string]time.Time{}}
	if err := os.WriteFile(filepath.Join(sshDir, uaaURLFile), []byte(c.URL+"\n"), 0o644); err != nil {
		ln.Close()
		return nil, err
	}
	c.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: c.handler()}
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("stand-in UAA and Cloud Controller", zap.Error(err))
		}
	}()
	return c, nil
}

// stop stops serving.
func (c *devCF) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.srv.Shutdown(ctx)
}

// proxyAuth is the proxy's cf authenticator configuration against the stand-in.
func (c *devCF) proxyAuth() *sshproxy.CFAuth {
	return &sshproxy.CFAuth{UAATokenURL: c.URL + "/oauth/token", ClientID: sshproxy.DefaultUAAClientID,
		ClientSecret: c.clientSecret, CCURL: c.URL}
}

func (c *devCF) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth/authorize", c.authorize)
	mux.HandleFunc("POST /oauth/token", c.token)
	mux.HandleFunc("GET /internal/apps/{guid}/ssh_access/{index}", c.sshAccess)
	return mux
}

// uaaError answers as UAA does: {"error", "error_description"}.
func uaaError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// ccError answers as Cloud Controller does: {"code", "description", "error_code"}.
func ccError(w http.ResponseWriter, status, code int, errorCode, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "description": description, "error_code": errorCode})
}

// authorize issues a one-time code to the dev user for the proxy's client, in the redirect's
// query, as UAA does for `cf ssh-code` (which does not follow the redirect).
func (c *devCF) authorize(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	if subtle.ConstantTimeCompare([]byte(token), []byte(c.userToken)) != 1 {
		uaaError(w, http.StatusUnauthorized, "unauthorized", "Full authentication is required to access this resource")
		return
	}
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != sshproxy.DefaultUAAClientID {
		uaaError(w, http.StatusBadRequest, "invalid_request", "response_type must be code and client_id "+sshproxy.DefaultUAAClientID)
		return
	}
	code, err := c.issue(c.codes, devCodeLifetime, 10)
	if err != nil {
		uaaError(w, http.StatusServiceUnavailable, "temporarily_unavailable", err.Error())
		return
	}
	w.Header().Set("Location", c.URL+"/login?code="+url.QueryEscape(code))
	w.WriteHeader(http.StatusFound)
}

// token exchanges a code, once, for a token: for the proxy's client alone.
func (c *devCF) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != sshproxy.DefaultUAAClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(c.clientSecret)) != 1 {
		uaaError(w, http.StatusUnauthorized, "unauthorized", "Bad credentials")
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "authorization_code" {
		uaaError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code")
		return
	}
	code := r.PostForm.Get("code")
	if !c.take(code) {
		uaaError(w, http.StatusBadRequest, "invalid_grant", "Invalid authorization code: "+code)
		return
	}
	token, err := c.issue(c.tokens, devTokenLifetime, 0)
	if err != nil {
		uaaError(w, http.StatusServiceUnavailable, "temporarily_unavailable", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "bearer",
		"expires_in": int(devTokenLifetime.Seconds()), "scope": "cloud_controller.read cloud_controller.write openid"})
}

// sshAccess answers, for a valid token, the process guid of the app's LRP.
func (c *devCF) sshAccess(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	if !c.valid(token) {
		ccError(w, http.StatusUnauthorized, 1000, "CF-InvalidAuthToken", "Invalid Auth Token")
		return
	}
	guid := r.PathValue("guid")
	process, err := c.processFor(r.Context(), guid)
	if err != nil {
		ccError(w, http.StatusServiceUnavailable, 10001, "CF-ServiceUnavailable", err.Error())
		return
	}
	if process == "" {
		ccError(w, http.StatusNotFound, 100004, "CF-AppNotFound", "The app could not be found: "+guid)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"process_guid": process})
}

// issue makes a random value, short (n letters and digits, as UAA's codes are typed) or a
// token shaped as UAA's (a JWT, unsigned here, naming the dev user), and keeps it until it
// expires.
func (c *devCF) issue(into map[string]time.Time, lifetime time.Duration, n int) (string, error) {
	var v string
	if n > 0 {
		v = randomAlnum(n)
	} else {
		claims, _ := json.Marshal(map[string]any{"user_name": "dev", "user_id": "dev-user", "client_id": sshproxy.DefaultUAAClientID,
			"jti": randomAlnum(16), "exp": c.now().Add(lifetime).Unix()})
		v = "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + "."
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, exp := range into {
		if !exp.After(now) {
			delete(into, k)
		}
	}
	if len(into) >= devMaxOutstanding {
		return "", fmt.Errorf("%d outstanding, try again later", len(into))
	}
	into[v] = now.Add(lifetime)
	return v, nil
}

// take spends a code: true once, while it is unexpired.
func (c *devCF) take(code string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.codes[code]
	delete(c.codes, code)
	return ok && exp.After(c.now())
}

func (c *devCF) valid(token string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.tokens[token]
	return ok && exp.After(c.now())
}

func randomAlnum(n int) string {
	const letters = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	out := make([]byte, 0, n)
	var b [1]byte
	for len(out) < n {
		rand.Read(b[:])
		if int(b[0]) < 256/len(letters)*len(letters) { // no bias toward the first letters
			out = append(out, letters[int(b[0])%len(letters)])
		}
	}
	return string(out)
}

// DesiredLRPs is what the stand-in Cloud Controller reads.
type DesiredLRPs interface {
	DesiredLRPs(ctx context.Context, f model.DesiredLRPFilter) ([]*model.DesiredLRP, error)
}

// processByLogGUID finds the LRP whose log_guid is the app guid. Cloud Controller keeps one
// LRP per app process (a deployment adds another for a while): of several, the first by
// process guid, so that the answer does not depend on the listing's order.
func processByLogGUID(bbs DesiredLRPs) func(context.Context, string) (string, error) {
	return func(ctx context.Context, appGUID string) (string, error) {
		lrps, err := bbs.DesiredLRPs(ctx, model.DesiredLRPFilter{})
		if err != nil {
			return "", err
		}
		var found []string
		for _, d := range lrps {
			if d.LogGUID == appGUID {
				found = append(found, d.ProcessGUID)
			}
		}
		if len(found) == 0 {
			return "", nil
		}
		return slices.Min(found), nil
	}
}

// SSHCode asks the dev stack's stand-in UAA for a one-time code for the ssh proxy's client,
// as `cf ssh-code` asks a real one: the dev user's token, the authorize endpoint, the code
// from the redirect's query.
func SSHCode(ctx context.Context, dataDir string) (string, error) {
	sshDir := filepath.Join(dataDir, "ssh")
	rawURL, err := os.ReadFile(filepath.Join(sshDir, uaaURLFile))
	if err != nil {
		return "", fmt.Errorf("no stand-in UAA under %s (is `make run` running with --data-dir %s?): %w", dataDir, dataDir, err)
	}
	token, err := os.ReadFile(filepath.Join(sshDir, uaaUserTokenFile))
	if err != nil {
		return "", err
	}
	u := strings.TrimSpace(string(rawURL)) + "/oauth/authorize?" + url.Values{"response_type": {"code"}, "client_id": {sshproxy.DefaultUAAClientID}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "bearer "+strings.TrimSpace(string(token)))
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("the stand-in UAA at %s: %w (is `make run` running?)", strings.TrimSpace(string(rawURL)), err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("the stand-in UAA answered %s without a code", resp.Status)
	}
	return loc.Query().Get("code"), nil
}
