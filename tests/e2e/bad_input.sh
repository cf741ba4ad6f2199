#!/usr/bin/env bash
# End to end through the acan command: bad input (job files, CSV and IDX data, safetensors models,
# inputs over the configured limits, credentials of a secure deployment, audit logs,
# space URIs, output directories) exits 1 or 2 (not a crash, a hang or 0), the first line of stderr
# names the culprit (file and line, key, byte or field), and nothing is left in, or lost from, the
# output directory. Every case fails before training starts unless its comment says otherwise.
# Usage: bad_input.sh ACAN_BINARY
set -euo pipefail
export LC_ALL=C
acan=${1:?usage: $0 ACAN_BINARY}
acan=$(cd "$(dirname "$acan")" && pwd)/$(basename "$acan")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
failures=0

# bad WANT ARGS...: `acan ARGS` exits 1 or 2 within 30 s, the first line of its stderr contains
# WANT, and out/ (the --out of every train case) holds no file afterwards.
bad() {
  local want=$1
  shift
  rm -rf out
  local rc=0
  timeout 30 "$acan" "$@" >/dev/null 2>stderr.txt || rc=$?
  local first
  first=$(head -n 1 stderr.txt)
  if [[ $rc -ne 1 && $rc -ne 2 ]]; then
    echo "FAIL: acan $* exited $rc (1 or 2 expected; 124 is a hang, >128 a crash): $first"
    failures=$((failures + 1))
  elif [[ $first != *"$want"* ]]; then
    echo "FAIL: acan $*: first line of stderr: $first"
    echo "      want: $want"
    failures=$((failures + 1))
  elif [[ -d out && -n $(find out -type f) ]]; then
    echo "FAIL: acan $* left files behind: $(find out -type f | tr '\n' ' ')"
    failures=$((failures + 1))
  else
    echo "ok ($rc): acan $* -> $first"
  fi
}

# good ARGS...: a control, the valid input the cases mutate; it must pass for them to mean anything.
good() {
  rm -rf out
  local rc=0
  timeout 30 "$acan" "$@" >/dev/null 2>stderr.txt || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: the control acan $* exited $rc: $(head -n 1 stderr.txt)"
    exit 1
  fi
}

# safetensors models, written byte by byte.
le64() { local i; for i in 0 1 2 3 4 5 6 7; do printf '%b' "\\x$(printf %02x $((($1 >> (8 * i)) & 255)))"; done; }
# mlp_header W0 W1 ...: sets HEADER (acan's tensor names) and DATA (its data bytes).
mlp_header() {
  local -a w=("$@")
  local h='' off=0 l n
  for ((l = 0; l + 1 < ${#w[@]}; l++)); do
    n=$((w[l + 1] * w[l] * 4))
    h+="\"layers.$l.weight\":{\"dtype\":\"F32\",\"shape\":[${w[l + 1]},${w[l]}],"
    h+="\"data_offsets\":[$off,$((off + n))]},"
    off=$((off + n))
    n=$((w[l + 1] * 4))
    h+="\"layers.$l.bias\":{\"dtype\":\"F32\",\"shape\":[${w[l + 1]}],"
    h+="\"data_offsets\":[$off,$((off + n))]},"
    off=$((off + n))
  done
  HEADER="{${h%,}}"
  DATA=$off
}
# safetensors FILE HEADER DATA_BYTES: the length, the header and zeros.
safetensors() { { le64 ${#2}; printf '%s' "$2"; head -c "$3" /dev/zero; } >"$1"; }

# --- Job files (TOML): a tiny valid job, then mutations of it, one line each.
cat >job.toml <<'EOF'
[model]
layers = [4, 3, 2]
activation = "tanh"
loss = "mse"
init = "xavier_uniform"

[data]
source = "synthetic"
samples = 8

[train]
epochs = 1
batch = 2
lr = 0.05
seed = 1

[partition]
strategy = "data"

[runtime]
handlers = 1
window = 1
EOF
mutate() { sed "$2" job.toml >"$1"; }  # mutate NEW.toml SED_SCRIPT
good train job.toml --out out --quiet

mutate syntax.toml 's/^lr = 0.05/lr = = 0.05/'
bad 'syntax.toml:14:6: TOML syntax error' train syntax.toml --out out
mutate header.toml 's/^\[train\]/[train/'
bad "header.toml:11:7: TOML syntax error: Error while parsing table header: expected ']'" \
  train header.toml --out out
mutate twice.toml 's/^lr = 0.05/lr = 0.05\nlr = 0.1/'
bad "twice.toml:15:6: TOML syntax error: Error while parsing key-value pair: cannot redefine" \
  train twice.toml --out out
mutate misspelt.toml 's/^lr = 0.05/lrate = 0.05/'
bad 'misspelt.toml:14: unknown key "train.lrate"; check its spelling' train misspelt.toml --out out
mutate section.toml 's/^\[model\]/[modle]/'
bad 'section.toml:1: unknown key "modle"; the job file has sections [model]' \
  train section.toml --out out
mutate type.toml 's/^batch = 2/batch = "two"/'
bad 'type.toml:13: key "train.batch" must be an integer, not a string' train type.toml --out out
mutate layers_type.toml 's/^layers = .*/layers = [4, "3", 2]/'
bad 'layers_type.toml:2: key "model.layers" must be an array of integers, not a string' \
  train layers_type.toml --out out
mutate negbatch.toml 's/^batch = 2/batch = -3/'
bad 'negbatch.toml:13: key "train.batch": must be >= 1' train negbatch.toml --out out
mutate negepochs.toml 's/^epochs = 1/epochs = -1/'
bad 'negepochs.toml:12: key "train.epochs": must be >= 0' train negepochs.toml --out out
mutate lr.toml 's/^lr = 0.05/lr = 0/'
bad 'lr.toml:14: key "train.lr": must be > 0' train lr.toml --out out
mutate momentum.toml 's/^lr = 0.05/momentum = 1.0/'
bad 'momentum.toml:14: key "train.momentum": must be in [0, 1)' train momentum.toml --out out
mutate handlers.toml 's/^handlers = 1/handlers = 0/'
bad 'handlers.toml:21: key "runtime.handlers": must be >= 1' train handlers.toml --out out
mutate widths.toml 's/^layers = .*/layers = [4]/'
bad 'widths.toml:2: key "model.layers": needs at least two widths' train widths.toml --out out
mutate activation.toml 's/^activation = "tanh"/activation = "tanhh"/'
bad 'activation.toml:3: key "model.activation": unknown activation "tanhh"; use one of: relu' \
  train activation.toml --out out
mutate init.toml 's/^init = .*/init = "xavier_unifrom"/'
bad 'init.toml:5: key "model.init": "xavier_unifrom" is not xavier_uniform | kaiming_uniform' \
  train init.toml --out out
mutate table.toml '/^\[runtime\]/,$d; 1i runtime = 3'
bad 'table.toml:1: "runtime" must be a table ([runtime])' train table.toml --out out
mutate unused.toml 's/^samples = 8/samples = 8\ntest_path = "t.csv"/'
bad 'unused.toml:10: key "data.test_path": is not used with data.source = "synthetic"' \
  train unused.toml --out out
# Every section has defaults (an empty file is the default job); what a source needs is required.
mutate nopath.toml 's/^source = .*/source = "csv"/'
bad 'nopath.toml: data.source = "csv" needs data.path (the CSV file)' train nopath.toml --out out
mutate nolabels.toml 's/^source = .*/source = "idx"\nimages = "img.idx"/'
bad 'nolabels.toml: data.source = "idx" needs data.images and data.labels' \
  train nolabels.toml --out out
mkdir folder
bad 'File is actually a directory: folder' train folder --out out

# --- CSV data: 2 features, 1 target; a job reading data.csv, its test split test.csv.
sed -e 's/^layers = .*/layers = [2, 1]/' -e 's/^source = .*/source = "csv"\npath = "data.csv"/' \
  -e '/^samples/d' job.toml >csv.toml
sed 's/^path = "data.csv"/path = "data.csv"\ntest_path = "test.csv"/' csv.toml >csv_test.toml
printf 'a,b,y\n1,2,3\n4,5,6\n' >data.csv
printf '1,2,3\n' >test.csv
good train csv_test.toml --out out --quiet
sed 's/"data.csv"/"nowhere.csv"/' csv.toml >csv_missing.toml
bad 'cannot open CSV file "nowhere.csv" (No such file or directory); check data.path' \
  train csv_missing.toml --out out
printf 'a,b,y\n1,2,3\n4,5' >data.csv  # truncated in its last row
bad 'data.csv:3:1 (byte 12): row has 2 columns, expected 3 like the first row' \
  train csv.toml --out out
printf 'a,b,y\n1,2,3\n4,x5,6\n' >data.csv
bad 'data.csv:3:2 (byte 14): cell "x5" is not a number' train csv.toml --out out
printf 'a,b,y\n1,2,3\n4,5,\n' >data.csv
bad 'data.csv:3:3 (byte 16): cell "" is not a number' train csv.toml --out out
printf 'a,b,y\n1,2,3\n1e999,5,6\n' >data.csv
bad 'data.csv:3:1 (byte 12): cell "1e999" is not a number' train csv.toml --out out
printf 'a,b,y\n' >data.csv
bad 'data.csv: no data rows; the file is empty or only a header' train csv.toml --out out
printf '1,2,3,4\n5,6,7,8\n' >data.csv
bad 'data.csv: rows have 3 features but model.layers starts with 2' train csv.toml --out out
printf '1,2,3\n4,5,6\n' >data.csv
printf '1,2,3\n4,5\n' >test.csv
bad 'test.csv:2:1 (byte 6): row has 2 columns, expected 3' train csv_test.toml --out out
sed 's/^path = "data.csv"/path = "folder"/' csv.toml >csv_folder.toml
bad 'CSV file "folder" is a directory, not a file; check data.path' train csv_folder.toml --out out

# --- IDX data: 3 images of 2x2 pixels, 3 labels, 3 classes.
sed -e 's/^layers = .*/layers = [4, 3]/' -e 's/^loss = .*/loss = "softmax_cross_entropy"/' \
  -e 's/^source = .*/source = "idx"\nimages = "img.idx"\nlabels = "lab.idx"/' -e '/^samples/d' \
  job.toml >idx.toml
images() { printf '\x00\x00\x08\x03\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x02'; printf '\x01%.0s' {1..12}; }
labels() { printf '\x00\x00\x08\x01\x00\x00\x00\x03\x00\x01\x02'; }
images >img.idx
labels >lab.idx
good train idx.toml --out out --quiet
sed 's/"img.idx"/"no-img.idx"/' idx.toml >idx_missing.toml
bad 'cannot open "no-img.idx" (No such file or directory); check the path' \
  train idx_missing.toml --out out
images | head -c 20 >img.idx
bad 'img.idx: truncated: the dimensions need 12 data bytes from byte 16 but only 4 are there' \
  train idx.toml --out out
images | head -c 10 >img.idx
bad 'img.idx: truncated in the header: 10 bytes, the dimensions need 16' train idx.toml --out out
echo 'hello, not an IDX file' >img.idx
bad 'img.idx: byte 0: IDX magic is 0x68656c6c, expected 0x00000803' train idx.toml --out out
{ images; printf 'X'; } >img.idx
bad 'img.idx: 1 unexpected bytes after the data at byte 28' train idx.toml --out out
printf '\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >img.idx
bad 'img.idx: bytes 4..16: the dimensions 4294967295 x 4294967295 x 4294967295 need more than' \
  train idx.toml --out out
images | gzip -c | head -c 20 >img.idx
bad 'img.idx: gzip data is truncated after' train idx.toml --out out
images >img.idx
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x00\x01' >lab.idx
bad 'img.idx has 3 images but lab.idx has 2 labels' train idx.toml --out out
# The message names the images file, though the labels are the culprit.
printf '\x00\x00\x08\x01\x00\x00\x00\x03\x00\x01\x09' >lab.idx
bad 'img.idx: labels go up to 9 but the model has 3 outputs' train idx.toml --out out
labels >lab.idx
sed 's/"img.idx"/"folder"/' idx.toml >idx_folder.toml
bad '"folder" is a directory, not an IDX file' train idx_folder.toml --out out

# --- safetensors models for the 4-3-2 job.
mlp_header 4 3 2
safetensors model.safetensors "$HEADER" "$DATA"
good eval model.safetensors job.toml
good train job.toml --init model.safetensors --out out --quiet
# eval reads its job file itself (train's is checked by the flag parser, above).
bad 'cannot open job file "missing.toml"' eval model.safetensors missing.toml
bad 'job file "folder" is a directory, not a file' eval model.safetensors folder
header_end=$((8 + ${#HEADER}))
head -c $((header_end + 20)) model.safetensors >cut.safetensors
bad 'cut.safetensors: tensor "layers.0.bias" needs data bytes [48, 60) but the file has only 20' \
  eval cut.safetensors job.toml
bad 'cut.safetensors: tensor "layers.0.bias" needs data bytes [48, 60) but the file has only 20' \
  train job.toml --init cut.safetensors --out out
head -c 5 model.safetensors >short.safetensors
bad 'short.safetensors: not a valid safetensors file: the file has 5 bytes, fewer than the 8-byte' \
  eval short.safetensors job.toml
safetensors json.safetensors "${HEADER%\}}," "$DATA"  # the header's closing brace is now a comma
bad "json.safetensors: not a valid safetensors file: the JSON header (bytes 8..$header_end) does" \
  eval json.safetensors job.toml
bad "json.safetensors: not a valid safetensors file: the JSON header (bytes 8..$header_end) does" \
  train job.toml --init json.safetensors --out out
{ le64 4096; tail -c +9 model.safetensors; } >long.safetensors
bad "long.safetensors: not a valid safetensors file: header length 4096 at byte 0 exceeds the" \
  eval long.safetensors job.toml
bad "long.safetensors: not a valid safetensors file: header length 4096 at byte 0 exceeds the" \
  train job.toml --init long.safetensors --out out
safetensors f16.safetensors "${HEADER/F32/F16}" "$DATA"
bad 'f16.safetensors: tensor "layers.0.weight" has dtype F16; acan reads only F32' \
  eval f16.safetensors job.toml
mlp_header 4 5 2
safetensors wide.safetensors "$HEADER" "$DATA"
bad "wide.safetensors does not fit [model] layers of job.toml: the model's widths [4, 5, 2] are" \
  eval wide.safetensors job.toml
bad 'wide.safetensors: tensor "layers.0.weight" has shape [5, 4] but model.layers [4, 3, 2] needs' \
  train job.toml --init wide.safetensors --out out
sed 's/^init = .*/init = "wide.safetensors"/' job.toml >init_file.toml
bad 'wide.safetensors: tensor "layers.0.weight" has shape [5, 4] but model.layers [4, 3, 2] needs' \
  train init_file.toml --out out
mlp_header 4 3 2
# A well-formed file whose bias does not go with its weight.
bias='"shape":[3],"data_offsets":[48,60]'
safetensors bias.safetensors "${HEADER/"$bias"/'"shape":[2],"data_offsets":[48,56]'}" "$DATA"
bad 'bias.safetensors: tensor "layers.0.bias" has shape [2] but model.layers [4, 3, 2] needs [3]' \
  eval bias.safetensors job.toml

# A model as a list of layers (issue 45): a layer that does not fit, named with its index and
# line; a model file of another model, named by tensor and layer.
cat >cnn.toml <<'TOML'
[model]
input_shape = [1, 4, 4]
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 2
kernel_size = 3
padding = 1
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "linear"
in_features = 8
out_features = 2
[data]
source = "synthetic"
samples = 8
TOML
good train cnn.toml --out out --quiet
sed 's/^in_features = 8/in_features = 10/' cnn.toml >cnn_linear.toml
bad 'cnn_linear.toml:14: layer 3 (linear): expects 10 inputs, gets 8 (the output of layer 2' \
  train cnn_linear.toml --out out
bad 'model.safetensors: tensor "0.weight" is missing; layer 0 (conv2d) needs it with shape 2 x 1' \
  eval model.safetensors cnn.toml
bad 'cannot open model file "missing.safetensors"' eval missing.safetensors job.toml
bad 'model file "folder" is a directory, not a file' eval folder job.toml

# --- Space URIs. Train opens the space after its banner line, hence --quiet to see the error
# first (the runtime could open it before the banner).
bad "unknown space scheme 'foo' in URI 'foo:'; known schemes: mem:" \
  train job.toml --space foo: --out out --quiet
bad "space URI 'mem' has no scheme" train job.toml --space mem --out out --quiet
bad "space URI 'mem:?bogus=1': unknown parameter 'bogus' for scheme 'mem'" \
  train job.toml --space 'mem:?bogus=1' --out out --quiet
bad "space URI 'mem:?max_value_bytes': parameter 'max_value_bytes' is not of the form key=value" \
  train job.toml --space 'mem:?max_value_bytes' --out out --quiet
bad "parameter max_value_bytes='abc' is not a non-negative integer" \
  train job.toml --space 'mem:?max_value_bytes=abc' --out out --quiet
sed 's/^window = 1/window = 1\nspace = "bogus:"/' job.toml >space.toml
bad "unknown space scheme 'bogus' in URI 'bogus:'" train space.toml --out out --quiet
bad "unknown space scheme 'foo' in URI 'foo:'" demo --space foo: --tasks 3
# Oversize values: found by the first put, after training has started.
bad "value for key 'job.p.param.l0.w.v0' is 48 bytes, over the space's max_value_bytes of 4" \
  train job.toml --space 'mem:?max_value_bytes=4' --out out --quiet
bad "value for key 'demo.task.0' is 4 bytes, over the space's max_value_bytes of 3" \
  demo --space 'mem:?max_value_bytes=3' --tasks 3
# Room for two tuples where the demo keeps 16 in flight: a put waits 1 s, then fails.
bad "space 'mem:?max_total_bytes=8' is full (8 of max_total_bytes 8 in use)" \
  demo --space 'mem:?max_total_bytes=8' --tasks 40

# --- Limits (docs/operations.md, "Limits"): sizes over a configured maximum are refused before
# they are read or allocated.
export ACAN_MAX_JOB_FILE_BYTES=100
bad "job file \"job.toml\" is $(stat -c %s job.toml) bytes, over the limit of 100" train job.toml --out out
bad "job file \"job.toml\" is $(stat -c %s job.toml) bytes, over the limit of 100" eval model.safetensors job.toml
unset ACAN_MAX_JOB_FILE_BYTES
# A gzip IDX file of 16 MB of pixels in 16 KB: refused while it inflates, past 1 MiB.
{ printf '\x00\x00\x08\x03\x00\x00\x10\x00\x00\x00\x40\x00\x00\x00\x00\x40'; head -c 16777216 /dev/zero; } |
  gzip -c >img.idx
export ACAN_MAX_DATA_FILE_BYTES=1M
bad 'img.idx holds more than 1048576 bytes (decompressed), over the limit for a data file' \
  train idx.toml --out out
unset ACAN_MAX_DATA_FILE_BYTES
images >img.idx
ACAN_MAX_MODEL_FILE_BYTES=50 timeout 30 "$acan" eval model.safetensors job.toml >/dev/null 2>stderr.txt && {
  echo "FAIL: a model over ACAN_MAX_MODEL_FILE_BYTES was read"
  failures=$((failures + 1))
}
grep -q 'model.safetensors" is .* bytes, over the limit of 50' stderr.txt || {
  echo "FAIL: model over the limit: $(head -n 1 stderr.txt)"
  failures=$((failures + 1))
}

# --- Credentials (docs/security.md): a secure deployment's directory that is missing or
# incomplete, an unknown role; each named before any connection is tried.
"$acan" secure init sec >/dev/null
bad "the handler credentials are incomplete: '$(pwd)/nowhere/ca.pem' is missing" \
  train job.toml --space "nats://127.0.0.1:1?secure=$(pwd)/nowhere&role=handler" --out out --quiet
bad "'chief' is not a role (manager, handler or observer)" \
  train job.toml --space "nats://127.0.0.1:1?secure=sec&role=chief" --out out --quiet
mv sec/handler-key.pem sec/handler-key.moved
bad "handler-key.pem' is missing" \
  train job.toml --space "nats://127.0.0.1:1?secure=sec&role=handler" --out out --quiet
mv sec/handler-key.moved sec/handler-key.pem
bad "tls:// needs the deployment's files: secure=DIR" train job.toml --space "tls://127.0.0.1:1" --out out --quiet

# --- Audit logs (acan audit verify): not a chain, empty, cut, a directory.
echo '{"a":1}' >notchain.jsonl
bad 'notchain.jsonl:1: no '"'"'seq'"'"' field' audit verify notchain.jsonl
: >empty.jsonl
bad 'empty.jsonl:0: no records' audit verify empty.jsonl

# --- Output directories that cannot be made, found before training.
here=$(pwd -P)
echo 'a file' >file
bad "--out 'file/sub': '$here/file' is not a directory" train job.toml --out file/sub
bad "--out 'file': '$here/file' is not a directory" train job.toml --out file
bad "--out 'file/x': '$here/file' is not a directory" experiment feasibility --quick --out file/x
bad "experiment adaptivity: --processes and --space apply to the robustness experiment only" \
  experiment adaptivity --processes 3 --out out
bad "experiment robustness: --space is the space of --processes" \
  experiment robustness --space nats:local --out out
if [[ $(id -u) -ne 0 ]]; then  # root writes anywhere
  mkdir locked
  chmod 555 locked
  bad "--out 'locked/run': cannot write in '$here/locked': Permission denied" \
    train job.toml --out locked/run
fi
if ! cmp -s file <(echo 'a file'); then
  echo "FAIL: the file given as --out changed"
  failures=$((failures + 1))
fi

# --- Nothing lost: runs that fail, before training (a bad CSV) or in it (a value the space
# refuses), leave the artefacts of an earlier run in their --out as they were, and add none.
good train job.toml --out kept --quiet
(cd kept && sha256sum -- *) >kept.sha256
kept_files=$(find kept -type f | wc -l)
printf '1,2,3\n4,x,6\n' >data.csv
# keeps ARGS...: `acan ARGS --out kept --quiet` fails and kept/ is as it was.
keeps() {
  local rc=0
  timeout 30 "$acan" "$@" --out kept --quiet 2>/dev/null || rc=$?
  if [[ $rc -ne 1 && $rc -ne 2 ]]; then
    echo "FAIL: acan $* --out kept exited $rc"
    failures=$((failures + 1))
  elif ! (cd kept && sha256sum -c --quiet ../kept.sha256 &&
          [[ $(find . -type f | wc -l) -eq $kept_files ]])
  then
    echo "FAIL: acan $* --out kept changed the earlier artefacts: $(find kept -type f)"
    failures=$((failures + 1))
  else
    echo "ok ($rc): acan $* --out kept left the earlier artefacts as they were"
  fi
}
keeps train csv.toml
# An audit log cut short (the job_end lost) and one with a record dropped.
head -n 3 kept/audit.jsonl >cut.jsonl
bad 'cut.jsonl:3: ' audit verify cut.jsonl
sed '2d' kept/audit.jsonl >gap.jsonl
bad 'gap.jsonl:2: ' audit verify gap.jsonl
keeps train job.toml --space 'mem:?max_value_bytes=4'

if [[ $failures -ne 0 ]]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
