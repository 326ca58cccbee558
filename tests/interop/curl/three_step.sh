#!/usr/bin/env bash
# three_step.sh runs the three-step flow of docs/authentication.md with
# openssl and curl against a real floe: it starts `floe serve` on a fresh
# data directory, registers an RSA public key for a principal, signs an
# RS256 JWT assertion with openssl, exchanges it at the token endpoint and
# calls GET /v1/config with the token. Then it checks that replaying the
# assertion is refused. Exits non-zero on any failure.
#
# Usage: FLOE_BIN=/path/to/floe FLOE_PORT=18281 tests/interop/curl/three_step.sh
set -euo pipefail

FLOE_BIN="${FLOE_BIN:-floe}"
PORT="${FLOE_PORT:-18281}"
work="$(mktemp -d)"
data="$work/data"
pid=""
cleanup() {
	if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "three_step: FAIL: $*" >&2; if [[ -f "$work/serve.log" ]]; then sed 's/^/  serve: /' "$work/serve.log" >&2; fi; exit 1; }

FLOE_ADMIN_LISTEN=off "$FLOE_BIN" serve --data-dir "$data" --listen "127.0.0.1:$PORT" >"$work/serve.log" 2>&1 &
pid=$!
FLOE="http://127.0.0.1:$PORT"
for _ in $(seq 1 150); do
	curl -fsS "$FLOE/.well-known/oauth-authorization-server" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || fail "floe serve exited"
	sleep 0.2
done
curl -fsS "$FLOE/.well-known/oauth-authorization-server" >/dev/null || fail "floe did not start"
cd "$work"

# --- the documented flow (docs/authentication.md) -------------------------

# 0. Once: a principal, a key pair, and the public key registered with Floe.
CLIENT_ID="$("$FLOE_BIN" principal create etl --data-dir "$data" | awk '/^client_id:/ {print $2}')"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out etl.key.pem 2>/dev/null
openssl pkey -in etl.key.pem -pubout -out etl.pub.pem
"$FLOE_BIN" principal add-key etl etl.pub.pem --data-dir "$data"

# 1. Sign an RS256 assertion (valid 2 minutes, single use) for the token endpoint.
TOKEN_URL="$(curl -fsS "$FLOE/.well-known/oauth-authorization-server" | sed -n 's/.*"token_endpoint":"\([^"]*\)".*/\1/p')"
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
NOW="$(date +%s)"
HEADER="$(printf '{"alg":"RS256","typ":"JWT"}' | b64url)"
PAYLOAD="$(printf '{"iss":"%s","sub":"%s","aud":"%s","iat":%d,"exp":%d,"jti":"%s"}' \
	"$CLIENT_ID" "$CLIENT_ID" "$TOKEN_URL" "$NOW" "$((NOW + 120))" "$(openssl rand -hex 16)" | b64url)"
SIGNATURE="$(printf '%s.%s' "$HEADER" "$PAYLOAD" | openssl dgst -sha256 -sign etl.key.pem -binary | b64url)"
ASSERTION="$HEADER.$PAYLOAD.$SIGNATURE"

# 2. Exchange it for a Floe access token.
RESPONSE="$(curl -sS -X POST "$TOKEN_URL" \
	-d grant_type=urn:ietf:params:oauth:grant-type:token-exchange \
	-d subject_token_type=urn:ietf:params:oauth:token-type:jwt \
	--data-urlencode "subject_token=$ASSERTION" \
	-d scope=catalog)"
ACCESS_TOKEN="$(printf '%s' "$RESPONSE" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')"

# 3. Present the token.
CONFIG="$(curl -fsS -H "Authorization: Bearer $ACCESS_TOKEN" "$FLOE/v1/config")"

# --- checks ------------------------------------------------------------------
[[ -n "$CLIENT_ID" ]] || fail "no client id from floe principal create"
[[ -n "$ACCESS_TOKEN" ]] || fail "no access token: $RESPONSE"
printf '%s' "$RESPONSE" | grep -q '"expires_in":900' || fail "expires_in is not 900: $RESPONSE"
printf '%s' "$RESPONSE" | grep -q '"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"' || fail "issued_token_type: $RESPONSE"
printf '%s' "$CONFIG" | grep -q '"overrides"' || fail "GET /v1/config: $CONFIG"
REPLAY="$(curl -sS -X POST "$TOKEN_URL" -d grant_type=urn:ietf:params:oauth:grant-type:token-exchange \
	-d subject_token_type=urn:ietf:params:oauth:token-type:jwt --data-urlencode "subject_token=$ASSERTION")"
printf '%s' "$REPLAY" | grep -q '"error":"invalid_grant"' || fail "replayed assertion not refused: $REPLAY"
STATUS="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ACCESS_TOKEN.x" "$FLOE/v1/config")"
[[ "$STATUS" == 401 ]] || fail "tampered token answered $STATUS"
echo "three_step: OK (client $CLIENT_ID, token endpoint $TOKEN_URL)"
