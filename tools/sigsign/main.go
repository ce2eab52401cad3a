// Command sigsign signs images in a registry with sigstore keys, for the
// signature policy's tests: what `skopeo copy --sign-by-sigstore-private-key`
// does (Debian's skopeo is built with sigstore signing disabled), with the
// same library, go.podman.io/image/v5's copy. Build it with -tags
// containers_image_openpgp.
//
//	sigsign keys DIR NAME                 writes DIR/NAME.key (encrypted), NAME.pub, NAME.pass
//	sigsign copy KEY PASSFILE REGISTRIES_D SRC DST
//	                                      copies docker://SRC to docker://DST (plain HTTP
//	                                      allowed), signing DST; the signature stored as
//	                                      REGISTRIES_D says (use-sigstore-attachments)
//	sigsign save SRC TAR                  saves docker://SRC (plain HTTP allowed) by its
//	                                      digest and, when the registry has it, its sigstore
//	                                      attachment (the tag sha256-HEX.sig) into one OCI
//	                                      layout archive, each named by its tag (as skopeo
//	                                      copy of both to one oci: layout): an image archive
//	                                      carrying its signatures
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/signature/sigstore"
	"go.podman.io/image/v5/types"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "keys":
		err = keys(os.Args[2], os.Args[3])
	case len(os.Args) == 7 && os.Args[1] == "copy":
		err = signedCopy(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6])
	case len(os.Args) == 4 && os.Args[1] == "save":
		err = save(context.Background(), os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: sigsign keys DIR NAME | sigsign copy KEY PASSFILE REGISTRIES_D SRC DST | sigsign save SRC TAR")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sigsign:", err)
		os.Exit(1)
	}
}

// keys generates a key pair (c/image's generator: ECDSA P-256, the private
// key encrypted as cosign's) with a passphrase of its own.
func keys(dir, name string) error {
	pass := []byte("pass-" + name)
	kp, err := sigstore.GenerateKeyPair(pass)
	if err != nil {
		return err
	}
	for ext, data := range map[string][]byte{".key": kp.PrivateKey, ".pub": kp.PublicKey, ".pass": pass} {
		if err := os.WriteFile(filepath.Join(dir, name+ext), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func signedCopy(key, passFile, registriesD, src, dst string) error {
	pass, err := os.ReadFile(passFile)
	if err != nil {
		return err
	}
	srcRef, err := docker.ParseReference("//" + src)
	if err != nil {
		return err
	}
	dstRef, err := docker.ParseReference("//" + dst)
	if err != nil {
		return err
	}
	pc, err := signature.NewPolicyContext(&signature.Policy{Default: signature.PolicyRequirements{signature.NewPRInsecureAcceptAnything()}})
	if err != nil {
		return err
	}
	defer func() { _ = pc.Destroy() }()
	sys := &types.SystemContext{RegistriesDirPath: registriesD, DockerInsecureSkipTLSVerify: types.OptionalBoolTrue}
	_, err = copy.Image(context.Background(), pc, dstRef, srcRef, &copy.Options{
		SourceCtx: sys, DestinationCtx: sys,
		SignBySigstorePrivateKeyFile: key, SignSigstorePrivateKeyPassphrase: pass,
	})
	return err
}
