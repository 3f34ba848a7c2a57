package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dataLink is the symlink through which the kubelet publishes a ConfigMap volume's
// current content: it points at a timestamped directory and is replaced atomically.
const dataLink = "..data"

// readAttempts bounds how often ReadDir retries when the kubelet swaps ..data under it.
const readAttempts = 5

// ReadDir reads the bundle from a mounted ConfigMap directory. The kubelet lays such a
// directory out as a timestamped directory holding the keys, the ..data symlink to it,
// and one symlink per key (bundle.json -> ..data/bundle.json); an update writes a new
// timestamped directory and renames a new ..data over the old one. ReadDir reads the
// keys through their names in dir and checks that ..data did not move meanwhile, so it
// never mixes two versions; a key whose symlink dangles mid-swap counts as absent.
// A plain directory holding bundle.json or bundle.json.gz (no ..data) is read as is.
func ReadDir(dir string) (*Bundle, error) {
	var lastErr error
	for range readAttempts {
		before, err := readLink(dir)
		if err != nil {
			return nil, err
		}
		data, binaryData, err := readKeys(dir)
		after, errAfter := readLink(dir)
		if errAfter != nil {
			return nil, errAfter
		}
		if before != after {
			lastErr = fmt.Errorf("bundle: %s changed while it was read", filepath.Join(dir, dataLink))
			continue
		}
		if err != nil {
			return nil, err
		}
		return Decode(data, binaryData)
	}
	return nil, lastErr
}

// readLink returns the target of dir/..data, or "" when dir has none.
func readLink(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, dataLink))
	switch {
	case err == nil:
		return target, nil
	case errors.Is(err, fs.ErrNotExist):
		if _, statErr := os.Stat(dir); statErr != nil {
			return "", fmt.Errorf("bundle: %w", statErr)
		}
		return "", nil
	default:
		return "", fmt.Errorf("bundle: %w", err)
	}
}

// readKeys reads whichever bundle keys exist in dir.
func readKeys(dir string) (map[string]string, map[string][]byte, error) {
	data := map[string]string{}
	binaryData := map[string][]byte{}
	plain, err := readOptional(filepath.Join(dir, KeyPlain))
	if err != nil {
		return nil, nil, err
	}
	if plain != nil {
		data[KeyPlain] = string(plain)
	}
	gz, err := readOptional(filepath.Join(dir, KeyGzip))
	if err != nil {
		return nil, nil, err
	}
	if gz != nil {
		binaryData[KeyGzip] = gz
	}
	return data, binaryData, nil
}

// readOptional reads a file through its symlink; a missing file or a dangling symlink
// yields nil.
func readOptional(path string) ([]byte, error) {
	p, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return p, nil
}
