package sqlite

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/keyfile"
	"github.com/custody-dev/custody/ledger"
)

// nextKeyFile holds a new signing key while a rotation commits: the key
// is durable before the ledger names it, and becomes signing.key once the
// ledger does.
const nextKeyFile = "signing.key.next"

// RotateKey gives the data directory in dir a new checkpoint signing key
// and records that on the ledger. No other process may have the store
// open: one still signing with the old key would refuse to go on past the
// rotation entry. One commit appends a
// ledger.KeyRotatedKind entry naming the old and the new public key and a
// checkpoint signed with the new key. signing.pub then lists both keys,
// oldest first, so that it verifies the checkpoints on either side (the
// rule is ledger.Verifier's). It is how a lost signing.key is replaced;
// the old key, when present, is simply retired.
//
// Entries after the last checkpoint cannot be vouched for without the old
// key: unless opts.AcceptTail accepts them (the rotation entry then names
// them), RotateKey refuses. A rotation cut short by a crash is finished,
// or undone, by the next Open.
func RotateKey(dir string, opts Options) (old, new ed25519.PublicKey, err error) {
	opts = opts.withDefaults()
	opts.ReadOnly = false
	db, err := openStore(context.Background(), dir, opts, true)
	if err != nil {
		return nil, nil, err
	}
	old = db.pub
	if old == nil {
		db.abort()
		return nil, nil, refuse(dir, "neither %s nor %s is there to name the key in force: restore %s", privateKeyFile, publicKeyFile, publicKeyFile)
	}
	new, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		db.abort()
		return nil, nil, fmt.Errorf("generate signing key: %w", err)
	}
	if err := stageKey(dir, priv); err != nil {
		db.abort()
		return nil, nil, err
	}
	rot := ledger.KeyRotation{Old: fmt.Sprintf("%x", []byte(old)), New: fmt.Sprintf("%x", []byte(new))}
	if db.unvouched {
		rot.AcceptedTail = &ledger.SeqRange{From: db.w.last.Size + 1, To: db.w.head.Seq}
	}
	db.priv, db.pub = priv, new
	db.w.priv, db.w.tail.key = priv, tailKey(priv)
	db.start()
	_, err = db.appendSealed(context.Background(), custody.Entry{Kind: ledger.KeyRotatedKind, Actor: "operator", Body: rot.Body()})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(filepath.Join(dir, nextKeyFile))
		return nil, nil, err
	}
	return old, new, installKey(dir, append(db.keys, new))
}

// stageKey writes priv to signing.key.next, durably (keyfile.Write).
func stageKey(dir string, priv ed25519.PrivateKey) error {
	return keyfile.Write(filepath.Join(dir, nextKeyFile), priv)
}

// installKey makes the staged key signing.key and lists keys in
// signing.pub.
func installKey(dir string, keys []ed25519.PublicKey) error {
	if err := os.Rename(filepath.Join(dir, nextKeyFile), filepath.Join(dir, privateKeyFile)); err != nil {
		return fmt.Errorf("install the new signing key: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return writePublicKeys(dir, keys)
}

// finishRotation settles a rotation a crash cut short: when the ledger's
// last checkpoint is signed by the staged key, the rotation committed and
// the key is installed; otherwise it did not, and the staged key goes.
func finishRotation(dir string, last custody.Checkpoint) error {
	next, err := readPrivateKey(filepath.Join(dir, nextKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pub := next.Public().(ed25519.PublicKey)
	if last.Size == 0 || ledger.VerifyCheckpoint(pub, last) != nil {
		return os.Remove(filepath.Join(dir, nextKeyFile))
	}
	keys, err := readPublicKeys(dir)
	if err != nil {
		return err
	}
	return installKey(dir, append(keys, pub))
}
