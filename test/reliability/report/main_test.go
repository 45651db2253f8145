package main

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	in := `{"kubelet":"ours","test":"KubeletRestart","name":"pods_ever_not_ready","value":0,"bound":"== 0","ok":true}
{"kubelet":"upstream","test":"KubeletRestart","name":"pods_ever_not_ready","value":3,"bound":"== 0","ok":false}
{"kubelet":"ours","test":"ContainerdRestart","name":"all_ready_after_runtime_back","value":1.2345,"unit":"s","bound":"<= 10","ok":true}
{"kubelet":"ours","test":"ContainerdRestart","name":"all_ready_after_runtime_back","value":0.5,"unit":"s","bound":"<= 10","ok":true}
`
	figs, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `| Test | Figure | Bound (ours) | ours | upstream |
|---|---|---|---|---|
| KubeletRestart | pods_ever_not_ready | == 0 | 0 | 3 ✗ |
| ContainerdRestart | all_ready_after_runtime_back | <= 10 | 0.50s | – |
`
	if got := render(figs); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
