package postgres

import (
	"crypto/ed25519"
	"errors"
	"os"

	"github.com/custody-dev/custody/ledger"
)

func readPub(file string) (ed25519.PublicKey, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ledger.ParsePublicKey(text)
}

func asVerifyError(err error, ve **ledger.VerifyError) bool { return errors.As(err, ve) }
