# Stand-in for os-resource-classes: the standard classes the drivers name.
FPGA = 'FPGA'
PGPU = 'PGPU'
VGPU = 'VGPU'
