#!/bin/sh
# memplan's liveness peak of nets exported by tools/memplan_torch.py against
# PyTorch's measured peak (tools/torch_fidelity.py), torchvision's
# classification families and a small transformer at batch 8, both gradient
# modes, on the CPU.  The table goes into bench/fidelity.md.
# Usage: sh bench/fidelity.sh [MODEL:SHAPE...]   (make memplan first)
cd "$(dirname "$0")/.." || exit 2
tv=torchvision.models
set -- ${@:-torch_fidelity:one_linear:8,1024 \
	$tv:resnet18:8,3,224,224 $tv:resnet50:8,3,224,224 \
	$tv:vgg11:8,3,224,224 $tv:vgg16:8,3,224,224 \
	$tv:mobilenet_v2:8,3,224,224 $tv:mobilenet_v3_small:8,3,224,224 \
	$tv:densenet121:8,3,224,224 \
	$tv:squeezenet1_0:8,3,224,224 $tv:squeezenet1_1:8,3,224,224 \
	$tv:shufflenet_v2_x1_0:8,3,224,224 \
	$tv:efficientnet_b0:8,3,224,224 \
	$tv:alexnet:8,3,224,224 $tv:mnasnet1_0:8,3,224,224 $tv:regnet_y_400mf:8,3,224,224 \
	torch_fidelity:small_transformer:8,64,128}
exec /usr/bin/python3 tools/torch_fidelity.py --optimizer momentum "$@"
