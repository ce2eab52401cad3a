// The signature policy (--signature-policy, --registries-d): loaded for the
// commands that pull or import images, said by `version` and `status`.

package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/trust"
)

func signatureFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "signature-policy", Value: trust.DefaultPolicy, EnvVars: []string{"PODRUN_SIGNATURE_POLICY"},
			Usage: "containers-policy.json(5) that pulled and imported images must satisfy, as podman's; the default may be missing (images are then not verified), a file named explicitly must exist"},
		&cli.StringFlag{Name: "registries-d", EnvVars: []string{"PODRUN_REGISTRIES_D"},
			Usage: "registries.d(5) directory saying where signatures are (use-sigstore-attachments) (default: /etc/containers/registries.d)"},
	}
}

// signaturePolicy loads the policy of c's flags; nil when there is none.
func signaturePolicy(c *cli.Context) (*trust.Policy, error) {
	return trust.Load(c.String("signature-policy"), c.IsSet("signature-policy"), c.String("registries-d"))
}

// verifier is the policy p of c's flags as images' Verifier, read again
// when its file changes; nil (not a nil *Live) when there was none at
// start: a policy file made later is read by the next podrun (the
// daemon's restart).
func verifier(c *cli.Context, p *trust.Policy) images.Verifier {
	if p == nil {
		return nil
	}
	return trust.NewLive(p, c.String("signature-policy"), c.IsSet("signature-policy"), c.String("registries-d"))
}

// policyLine says which signature policy applies, once, for `version` and
// `status`.
func policyLine(c *cli.Context) string {
	p, err := signaturePolicy(c)
	switch {
	case err != nil:
		return fmt.Sprintf("%v (podrun refuses to pull or import)", err)
	case p == nil:
		return fmt.Sprintf("signature policy: none (%s absent): images are not verified", c.String("signature-policy"))
	}
	return "signature policy: " + p.Path()
}

func printPolicyLine(w io.Writer, c *cli.Context) {
	fmt.Fprintln(w, policyLine(c))
}
