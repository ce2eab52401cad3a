package kubenode

import (
	"io/fs"
	"runtime"
	"testing"
)

func TestSystemInfo(t *testing.T) {
	full := map[string]string{
		machineIDFile:  "0123abcd\n",
		systemUUIDFile: "uuid-1\n",
		bootIDFile:     "boot-1\n",
		kernelFile:     "6.1.0-28-amd64\n",
		osReleaseFile:  "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
	}
	for _, tc := range []struct {
		name          string
		files         map[string]string
		osImage, boot string
	}{
		{"all files", full, "Debian GNU/Linux 12 (bookworm)", "boot-1"},
		{"none readable", map[string]string{}, "Unknown", ""},
		{"unquoted pretty name", map[string]string{osReleaseFile: "PRETTY_NAME=Alpine\n"}, "Alpine", ""},
		{"single-quoted pretty name", map[string]string{osReleaseFile: "PRETTY_NAME='Buildroot 2024.02'\n"}, "Buildroot 2024.02", ""},
		{"no pretty name", map[string]string{osReleaseFile: "NAME=x\n"}, "Unknown", ""},
		{"empty pretty name", map[string]string{osReleaseFile: "PRETTY_NAME=\"\"\n"}, "Unknown", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				s, ok := tc.files[p]
				if !ok {
					return nil, fs.ErrNotExist
				}
				return []byte(s), nil
			}
			i := SystemInfo(read, "containerd://1.7.35", "v0.9.0")
			if i.OSImage != tc.osImage || i.BootID != tc.boot || i.ContainerRuntimeVersion != "containerd://1.7.35" || i.KubeletVersion != "v0.9.0" ||
				i.OperatingSystem != runtime.GOOS || i.Architecture != runtime.GOARCH {
				t.Errorf("%+v", i)
			}
			if tc.name == "all files" && (i.MachineID != "0123abcd" || i.SystemUUID != "uuid-1" || i.KernelVersion != "6.1.0-28-amd64") {
				t.Errorf("ids: %+v", i)
			}
		})
	}
}
