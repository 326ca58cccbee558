package sharing

import (
	"context"
	"time"
)

// Store persists shares, objects, recipients, tokens and grants
// (*sqlstore.Store implements it). Names are compared without regard to
// case. Errors are *floe.Error values of the kinds documented per method;
// a limit reached is Unprocessable naming the limit.
type Store interface {
	// CreateShare adds a share: AlreadyExists (entity "share") if the name
	// is taken, Unprocessable when maxShares shares exist.
	CreateShare(ctx context.Context, s ShareInfo, maxShares int) error
	// ShareByName returns a share: NotFound (entity "share").
	ShareByName(ctx context.Context, name string) (ShareInfo, error)
	// ListShares returns every share ordered by name.
	ListShares(ctx context.Context) ([]ShareInfo, error)
	// DropShare removes a share with its objects and grants, and records
	// (in the same transaction) the revocation of the credentials vended
	// to the principals named by revokePrincipals: NotFound (entity "share").
	DropShare(ctx context.Context, shareID string, revokePrincipals []string) error
	// AddShareObject adds an object to its share: AlreadyExists (entity
	// "share object") if the share has the object or its visible name
	// already, Unprocessable when the share holds maxObjects objects.
	AddShareObject(ctx context.Context, o Object, maxObjects int) error
	// RemoveShareObject removes an object of a share and records the
	// revocation of revokePrincipals' credentials: NotFound (entity
	// "share object").
	RemoveShareObject(ctx context.Context, shareID, objectID string, revokePrincipals []string) error
	// ShareObjects returns the objects of a share ordered by visible key.
	ShareObjects(ctx context.Context, shareID string) ([]Object, error)

	// CreateRecipient adds a recipient with its first token: AlreadyExists
	// (entity "recipient") if the name is taken, Unprocessable when
	// maxRecipients recipients exist.
	CreateRecipient(ctx context.Context, r RecipientInfo, t TokenInfo, maxRecipients int) error
	// RecipientByName returns a recipient: NotFound (entity "recipient").
	RecipientByName(ctx context.Context, name string) (RecipientInfo, error)
	// ListRecipients returns every recipient ordered by name.
	ListRecipients(ctx context.Context) ([]RecipientInfo, error)
	// RotateToken adds token t to its recipient and makes every other live
	// token of the recipient expire at graceEnd at the latest; a graceEnd
	// not after now revokes them at once (recorded as revocations, as
	// RevokeTokens does). Dead tokens are deleted. Unprocessable when
	// the recipient would hold more than maxTokens live tokens; NotFound
	// (entity "recipient").
	RotateToken(ctx context.Context, t TokenInfo, graceEnd time.Time, maxTokens int) error
	// RevokeTokens revokes the recipient's live tokens (only tokenID when
	// not empty) and records, in the same transaction, a token revocation
	// for each (package revoke) so that vended credentials and URLs
	// carrying their ids stop working on every node. It returns the ids
	// revoked: NotFound (entity "token") when there was none.
	RevokeTokens(ctx context.Context, recipientID, tokenID string) ([]string, error)
	// RecipientTokens returns a recipient's tokens (live or not), newest first.
	RecipientTokens(ctx context.Context, recipientID string) ([]TokenInfo, error)
	// TokenByHash returns the token whose hash is hash and its recipient:
	// NotFound (entity "token").
	TokenByHash(ctx context.Context, hash string) (TokenInfo, RecipientInfo, error)
	// Token returns a token by id: NotFound (entity "token").
	Token(ctx context.Context, id string) (TokenInfo, error)

	// GrantShare grants a share to a recipient: AlreadyExists (entity
	// "share grant").
	GrantShare(ctx context.Context, g GrantInfo) error
	// RevokeShare removes the grant of a share to a recipient and records
	// the revocation of revokePrincipals' credentials: NotFound (entity
	// "share grant").
	RevokeShare(ctx context.Context, share, recipient string, revokePrincipals []string) error
	// ShareGrants returns the grants of a share ("" for any) to a recipient
	// ("" for any), ordered by share then recipient.
	ShareGrants(ctx context.Context, share, recipient string) ([]GrantInfo, error)
}
