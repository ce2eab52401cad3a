// podrun image import|pull|ls|prune.

package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/run"
)

func imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "manage images",
		Subcommands: []*cli.Command{
			{
				Name: "import", Usage: "import an OCI or docker image archive", ArgsUsage: "FILE.tar|-",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError{"image import: name one FILE.tar (or - for stdin)"}
					}
					return withHost(c.Context, c, func(h *run.Host) error {
						r, err := openInput(c.Args().First())
						if err != nil {
							return err
						}
						defer r.Close()
						imgs, err := h.Images().Import(c.Context, r)
						if err != nil {
							return err
						}
						for _, i := range imgs {
							fmt.Printf("%s\t%s\n", i.Ref, i.Digest)
						}
						return nil
					})
				},
			},
			{
				Name:        "prune",
				Usage:       "remove unused images, as the kubelet's image GC",
				Description: "Removes images no container uses above --image-gc-high-threshold, down to the low one;\n-a: every unused image.",
				Flags:       append([]cli.Flag{&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "every image no container uses (older than --image-minimum-gc-age), whatever the disk's use"}}, imageGCFlags()...),
				Action: func(c *cli.Context) error {
					p, err := imageGCPolicy(c)
					if err != nil {
						return err
					}
					return withHost(c.Context, c, func(h *run.Host) error {
						removed, err := h.ImageCollector().Collect(c.Context, imagegc.Collection{Policy: p, All: c.Bool("all")})
						for _, ref := range removed {
							fmt.Printf("deleted %s\n", ref)
						}
						return err
					})
				},
			},
			{
				Name: "ls", Usage: "list images", Flags: []cli.Flag{outputFlag("json", "yaml")},
				Action: func(c *cli.Context) error {
					return withHost(c.Context, c, func(h *run.Host) error {
						imgs, err := h.Engine().Images(c.Context)
						if err != nil {
							return err
						}
						return printers.Images(os.Stdout, imgs, c.String("output"))
					})
				},
			},
			{
				Name: "pull", Usage: "pull an image (credentials from --registry-config)", ArgsUsage: "REF",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError{"image pull: name one REF"}
					}
					return withHost(c.Context, c, func(h *run.Host) error {
						img, err := h.Images().Pull(c.Context, c.Args().First())
						if perr := (*images.PullError)(nil); errors.As(err, &perr) && perr.Reason == images.ReasonInvalidImageName {
							return usageError{err.Error()}
						}
						if err != nil {
							return err
						}
						fmt.Printf("%s\t%s\n", img.Ref, img.Digest)
						return nil
					})
				},
			},
		},
	}
}

func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(path)
}
