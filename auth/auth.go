// Package auth authenticates requests: it turns a bearer credential, an API token
// (parley.TokenPrefix...) or a JWT, into the parley.Principal it stands for. API tokens
// are checked against the store (parley.TokenService); JWTs are verified with
// golang-jwt against an HS256 secret, the public keys of a JWKS file (read once, at
// start) and/or those of a JWKS URL (fetched at start and refreshed by keyfunc: every
// JWKSRefresh, and at once, rate-limited, when a token names a key it does not know,
// which is how an identity provider's key rotation reaches Parley). A claim (sub by
// default) names the owner; the scope (or scp) claim may make the principal read-only.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/parley-dev/parley"
)

// Config says which credentials a server accepts.
type Config struct {
	// Tokens accepts API tokens from the store (parley token create).
	Tokens parley.TokenService
	// JWTSecret verifies HS256 JWTs; empty accepts none.
	JWTSecret []byte
	// JWKSFile is a JSON Web Key Set whose public keys verify RS256, RS384, RS512,
	// ES256, ES384, ES512, PS256... and EdDSA JWTs; empty accepts none.
	JWKSFile string
	// JWKSURL is where an identity provider publishes its JSON Web Key Set, e.g.
	// https://idp.example.com/.well-known/jwks.json; it is fetched at start (New fails
	// when it cannot be) and refreshed every JWKSRefresh (default 1h) and when a JWT
	// names an unknown key (at most once every 10 s). Close stops the refreshing.
	JWKSURL     string
	JWKSRefresh time.Duration
	// OwnerClaim is the JWT claim that names the owner (default "sub").
	OwnerClaim string
	// Issuer and Audience, when set, must match the JWT's iss and one of its aud.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat (default 30s).
	Leeway time.Duration
	// Now is the clock (default time.Now): tests move it.
	Now func() time.Time
}

// InvalidTokens implements parley.CredentialChecker: JWTs cannot be revoked (their
// expiry ends what they opened), API tokens can.
func (a *Authenticator) InvalidTokens(ctx context.Context, ids []string) ([]string, error) {
	if a.cfg.Tokens == nil {
		return ids, nil
	}
	return a.cfg.Tokens.InvalidTokens(ctx, ids)
}

// The scopes a JWT's scope (a space-separated string) or scp (a list, or a string)
// claim may grant. A JWT granting ScopeRead but not ScopeWrite is read-only; one that
// grants neither (no Parley scope at all) may do everything its owner may, as before
// scopes existed: the issuer and audience checks decide who gets a token at all.
const (
	ScopeRead  = "parley:read"
	ScopeWrite = "parley:write"
)

// Authenticator implements parley.Authenticator.
type Authenticator struct {
	cfg    Config
	parser *jwt.Parser
	keys   jwt.Keyfunc // nil when JWTs are not accepted
	// stop ends the JWKS URL's refreshing.
	stop context.CancelFunc
}

var _ parley.Authenticator = (*Authenticator)(nil)

// New returns an Authenticator for cfg, reading the JWKS file and fetching the JWKS URL
// when they are named. Close it to stop refreshing the JWKS URL.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OwnerClaim == "" {
		cfg.OwnerClaim = "sub"
	}
	if cfg.JWKSRefresh <= 0 {
		cfg.JWKSRefresh = time.Hour
	}
	a := &Authenticator{cfg: cfg, stop: func() {}}
	var fileKeys, urlKeys keyfunc.Keyfunc
	if cfg.JWKSFile != "" {
		b, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("auth.jwks_file: %w", err)
		}
		if fileKeys, err = keyfunc.NewJWKSetJSON(json.RawMessage(b)); err != nil {
			return nil, fmt.Errorf("auth.jwks_file %s: not a JSON Web Key Set: %w", cfg.JWKSFile, err)
		}
	}
	if cfg.JWKSURL != "" {
		ctx, stop := context.WithCancel(context.Background())
		k, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
			RefreshInterval: cfg.JWKSRefresh,
			// A key rotation shows as a token signed with a key not yet fetched: fetch
			// again at once, but not more than every 10 s, so a flood of tokens with
			// made-up key ids cannot turn Parley into a flood of requests to the IdP.
			RefreshUnknownKID: rate.NewLimiter(rate.Every(10*time.Second), 1),
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("auth.jwks_url %s: %w", cfg.JWKSURL, err)
		}
		// keyfunc does not fail when the first fetch does: check it did get keys, so a
		// wrong URL stops the server at start rather than refusing every JWT.
		if keys, err := k.Storage().KeyReadAll(ctx); err != nil || len(keys) == 0 {
			stop()
			if err == nil {
				err = errors.New("no keys could be fetched from it (is it a JSON Web Key Set, and does it answer?)")
			}
			return nil, fmt.Errorf("auth.jwks_url %s: %w", cfg.JWKSURL, err)
		}
		urlKeys, a.stop = k, stop
	}
	jwks := anyKeys(fileKeys, urlKeys)
	var methods []string
	if len(cfg.JWTSecret) > 0 {
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if jwks != nil {
		// Asymmetric algorithms only: a public key must never be taken for an HMAC secret.
		methods = append(methods, "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
	}
	if len(methods) == 0 {
		return a, nil
	}
	// WithIssuedAt refuses a token issued in the future (beyond the leeway);
	// WithJSONNumber keeps exp, nbf and iat numbers as json.Number, so that MapClaims
	// (see Authenticate) takes them exactly.
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods), jwt.WithExpirationRequired(), jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now), jwt.WithIssuedAt(), jwt.WithJSONNumber(),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	a.parser = jwt.NewParser(opts...)
	a.keys = func(t *jwt.Token) (any, error) {
		if t.Method.Alg() == jwt.SigningMethodHS256.Alg() {
			if len(cfg.JWTSecret) == 0 {
				return nil, errors.New("HS256 is not accepted")
			}
			return cfg.JWTSecret, nil
		}
		if jwks == nil {
			return nil, errors.New("no JWKS is configured")
		}
		return jwks(t)
	}
	return a, nil
}

// anyKeys is a keyfunc that finds a JWT's key in the first of sets that has it; nil
// when none is given.
func anyKeys(sets ...keyfunc.Keyfunc) jwt.Keyfunc {
	var ks []keyfunc.Keyfunc
	for _, k := range sets {
		if k != nil {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	return func(t *jwt.Token) (any, error) {
		var err error
		for _, k := range ks {
			var key any
			if key, err = k.Keyfunc(t); err == nil {
				return key, nil
			}
		}
		return nil, err
	}
}

// Close stops refreshing the JWKS URL.
func (a *Authenticator) Close() { a.stop() }

// Configured reports whether the Authenticator accepts any credential at all.
func (a *Authenticator) Configured() bool { return a.cfg.Tokens != nil || a.keys != nil }

// Authenticate implements parley.Authenticator.
func (a *Authenticator) Authenticate(ctx context.Context, credential string) (*parley.Principal, error) {
	credential = strings.TrimSpace(credential)
	if strings.HasPrefix(credential, parley.TokenPrefix) {
		if a.cfg.Tokens == nil {
			return nil, parley.Errorf(parley.EUNAUTHORIZED, "API tokens are not accepted by this server.")
		}
		return a.cfg.Tokens.AuthenticateToken(ctx, credential)
	}
	if a.keys == nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The credential is not an API token (%s...), and this server accepts no JWTs.", parley.TokenPrefix)
	}
	// MapClaims, not RegisteredClaims: RegisteredClaims's NumericDate also takes a
	// string of digits ("exp": "99999999999"), where RFC 7519 (section 2, NumericDate)
	// wants a JSON number; MapClaims refuses any other type, for exp, nbf and iat alike,
	// and (below) an owner claim that is not a string.
	claims := jwt.MapClaims{}
	if _, err := a.parser.ParseWithClaims(credential, claims, a.keys); err != nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT is not valid: %s.", jwtProblem(err))
	}
	name, isString := claims[a.cfg.OwnerClaim].(string)
	if _, present := claims[a.cfg.OwnerClaim]; present && !isString {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT is not valid: its %s claim has the wrong type: it must be a string.", a.cfg.OwnerClaim)
	}
	owner, err := parley.CleanOwner(name)
	if err != nil {
		return nil, parley.Errorf(parley.EUNAUTHORIZED, "The JWT's %s claim does not name an owner: %s.", a.cfg.OwnerClaim, parley.ErrorMessage(err))
	}
	p := &parley.Principal{Owner: owner, Method: "jwt", ReadOnly: readOnlyScopes(claims)}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.ExpiresAt = exp.Time
	}
	return p, nil
}

// readOnlyScopes reports whether a JWT's scopes (scope: "a b c", or scp: ["a", "b"] or
// "a b") grant ScopeRead without ScopeWrite.
func readOnlyScopes(claims jwt.MapClaims) bool {
	var scopes []string
	for _, key := range []string{"scope", "scp"} {
		switch v := claims[key].(type) {
		case string:
			scopes = append(scopes, strings.Fields(v)...)
		case []any:
			for _, s := range v {
				if s, ok := s.(string); ok {
					scopes = append(scopes, s)
				}
			}
		}
	}
	return slices.Contains(scopes, ScopeRead) && !slices.Contains(scopes, ScopeWrite)
}

// jwtProblem says what is wrong with a token in words that reveal nothing secret.
func jwtProblem(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "it has expired"
	case errors.Is(err, jwt.ErrInvalidType):
		return "its exp, nbf, iat or sub claim has the wrong type (the times must be JSON numbers)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "its iat is in the future"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "it is not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "it has no exp claim"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "its issuer is not the one configured"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "its audience is not the one configured"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "its signature does not verify"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "it is malformed"
	}
	return "it cannot be verified"
}
