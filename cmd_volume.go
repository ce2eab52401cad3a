// podrun volume ls|rm.

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/claims"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/run"
)

func volumeCommand() *cli.Command {
	return &cli.Command{
		Name:        "volume",
		Usage:       "manage the local volumes of persistentVolumeClaims",
		Description: "The volumes of persistentVolumeClaim volumes are kept across down.",
		Subcommands: []*cli.Command{
			{
				Name: "ls", Usage: "list the claims' volumes and the pods that use them",
				Flags: []cli.Flag{outputFlag("json", "yaml")},
				Action: func(c *cli.Context) error {
					return withHost(c.Context, c, func(h *run.Host) error {
						vols, err := claims.Node{Lifecycle: h, Root: c.String("root")}.Claims(c.Context)
						if err != nil {
							return err
						}
						if o := c.String("output"); o != "" {
							return printers.Object(os.Stdout, vols, o)
						}
						tw := tabwriter.NewWriter(os.Stdout, 0, 8, 3, ' ', 0)
						fmt.Fprintln(tw, "NAMESPACE\tNAME\tUSED BY\tPATH")
						for _, cl := range vols {
							users := strings.Join(cl.UsedBy, ",")
							if users == "" {
								users = "<none>"
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cl.Namespace, cl.Name, users, cl.Path)
						}
						return tw.Flush()
					})
				},
			},
			{
				Name: "rm", Usage: "remove claims' volumes and their data (not while in use)", ArgsUsage: "NAME|NAMESPACE/NAME ...",
				Flags: []cli.Flag{namespaceFlag("namespace of each volume given as a NAME (default: default)")},
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return usageError{"volume rm: name at least one volume"}
					}
					return withHost(c.Context, c, func(h *run.Host) error {
						var errs []error
						for _, a := range c.Args().Slice() {
							t, err := podTarget(c, a)
							if err != nil {
								return err
							}
							found, err := claims.Node{Lifecycle: h, Root: c.String("root")}.RemoveClaim(c.Context, t.Namespace, t.Name)
							switch {
							case err != nil:
								errs = append(errs, err)
							case found:
								fmt.Printf("volume/%s removed\n", t)
							default:
								fmt.Printf("volume/%s not found (nothing to do)\n", t)
							}
						}
						return errors.Join(errs...)
					})
				},
			},
		},
	}
}
