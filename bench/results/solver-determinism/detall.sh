#!/bin/bash
# Old vs new binary, 3 compiles each of four zoo models with many run-time checks, 4 spinning processes beside them.
for k in 1 2 3 4; do (while :; do :; done) & done
Z=/work/wt-solver/test/onnx/zoo
for m in detr_dynamo:'batch in [1, 3]':'height in [16, 64]':'width in [16, 64]' detr_torchscript:'batch in [1, 3]':'height in [16, 64]':'width in [16, 64]' segformer_torchscript swin_dynamo wavlm_dynamo; do
  name=${m%%:*}
  mapfile -t W < <(/usr/bin/python3 -c "
import sys,re,json,numpy as np; sys.path.insert(0,'$Z'); import zoo_test as zt
m='$Z/$name.onnx'; data=np.load(m[:-5]+'.npz'); meta=json.loads(str(data['meta'])); n=len(meta['sizes'])
for dim,uses in sorted(zt.dim_params(m).items()):
  if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', dim): continue
  hi=max(data['in.%s.%d'%(i,k)].shape[a] for i,a in uses for k in range(n)); lo=max(int(meta.get('min',{}).get(i,{}).get(str(a),1)) for i,a in uses)
  print('--where'); print('%s in [%d, %d]'%(dim,lo,hi))")
  for b in old:/work/main/build/tools/dscc budget:/work/wt-solver/build/tools/dscc-budget floordiv:/work/wt-solver/build/tools/dscc-budget-floordiv; do
    echo "$name ${b%%:*}: $(./det.sh ${b#*:} $Z/$name.onnx 3 "${W[@]}" | awk '{print $2, $3}' | sort | uniq -c | tr '\n' ';')"
  done
done
kill $(jobs -p) 2>/dev/null
