package main

import (
	"reflect"
	"strings"
	"testing"
)

const testSrc = "package e2e\n\n" +
	"import (\n\t\"fmt\"\n\t\"strings\"\n)\n\n" +
	"const tmpl = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: tm\nspec:\n  containers:\n  - {name: c, image: IMAGE}\n`\n\n" +
	"func helper(name string, port int) string {\n" +
	"\treturn fmt.Sprintf(`apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - {name: c, image: %s, args: [\"%d\"]}\n`, name, H.Image, port)\n}\n\n" +
	"func f(t T, v string) {\n" +
	"\tuse(`apiVersion: v1\nkind: Pod\nmetadata:\n  name: lit\nspec:\n  containers:\n  - {name: c, image: ` + H.Image + `}\n`)\n" +
	"\tuse(helper(\"hp\", 8080))\n" +
	"\tuse(strings.ReplaceAll(tmpl, \"IMAGE\", H.Image))\n" +
	"\tuse(`apiVersion: v1\nkind: Pod\nmetadata:\n  name: ` + v + `\nspec: {}\n`)\n" +
	"\tuse(helper(v, 1))\n" +
	"}\n"

func TestExtract(t *testing.T) {
	found, err := Extract(map[string][]byte{"x_test.go": []byte(testSrc)}, Env{"H.Image": "img:1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.Where+" "+strings.ReplaceAll(f.Text, "\n", "|"))
	}
	want := []string{
		// the template constant itself, as written
		"x_test.go:8 apiVersion: v1|kind: Pod|metadata:|  name: tm|spec:|  containers:|  - {name: c, image: IMAGE}|",
		"x_test.go:29 apiVersion: v1|kind: Pod|metadata:|  name: lit|spec:|  containers:|  - {name: c, image: img:1}|",
		`x_test.go:37 apiVersion: v1|kind: Pod|metadata:|  name: hp|spec:|  containers:|  - {name: c, image: img:1, args: ["8080"]}|`,
		"x_test.go:38 apiVersion: v1|kind: Pod|metadata:|  name: tm|spec:|  containers:|  - {name: c, image: img:1}|",
		// neither the sum using v nor helper(v, 1): a part of a manifest is not one
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func pod(name, extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + extra +
		"  containers:\n  - {name: c, image: podrun.test/busybox:1}\n"
}

func TestSelect(t *testing.T) {
	found := []Found{
		{Where: "a:1", Text: pod("ok", "") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"},
		{Where: "a:2", Text: pod("ok", "")},                    // the same pod again: kept once
		{Where: "a:3", Text: pod("ok", "  hostname: other\n")}, // another pod of that name: renamed
		{Where: "a:4", Text: pod("host", "  volumes:\n  - {name: h, hostPath: {path: /srv}}\n")},
		{Where: "a:5", Text: pod("Bad_Name", "")}, // podrun refuses it
		{Where: "a:6", Text: strings.ReplaceAll(pod("reg", ""), "podrun.test/busybox:1", "quay.io/x:1")},
		{Where: "a:7", Text: strings.ReplaceAll(pod("tmpl", ""), "podrun.test/busybox:1", "IMAGE")}, // a template
		{Where: "a:8", Text: pod("cm", "  volumes:\n  - {name: v, configMap: {name: cm}}\n")},
	}
	kept, skipped := Select(found, []string{"podrun.test/busybox:1"})
	var names []string
	for _, k := range kept {
		names = append(names, k.Name)
	}
	if want := []string{"ok", "ok-2"}; !reflect.DeepEqual(names, want) {
		t.Errorf("kept %v, want %v", names, want)
	}
	if len(kept) == 2 && !strings.Contains(kept[1].YAML, "name: ok-2") {
		t.Errorf("renamed pod:\n%s", kept[1].YAML)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.Name] = s.Reason
	}
	for name, want := range map[string]string{"host": "hostPath", "Bad_Name": "podrun refuses it", "reg": "image quay.io/x:1", "cm": "ConfigMap"} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("%s skipped for %q, want %q in the reason", name, reasons[name], want)
		}
	}
	if len(skipped) != 4 {
		t.Errorf("skipped %v, want 4 (the template is not a pod)", skipped)
	}
}
