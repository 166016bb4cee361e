#!/usr/bin/env python3
"""Microbenchmarks behind docs/calibration.md (first run): per-kernel launch cost, HBM
device-to-device copy and elementwise bandwidth, bf16 and fp8 GEMM TFLOP/s over square and
transformer-layer shapes, and torch SDPA attention per backend (flash, math, efficient, cuDNN),
forward and forward+backward. Prints CSV and writes $OUT/microbench.csv. Needs PyTorch with
CUDA. Each timing: one warm-up, then back-to-back runs for about 50 ms between CUDA events.
Kept terse so that it travels inline to the GPU machine; docs/data/h100_microbench.csv is its
output on an H100.
"""
import datetime,os,subprocess as sp,torch
T=torch;C="cuda";B=T.bfloat16;R=[]
def P(*f):
 l=",".join(map(str,f));R.append(l);print(l,flush=True)
def ti(f):
 f();T.cuda.synchronize();E=T.cuda.Event;s,e=E(enable_timing=1),E(enable_timing=1)
 s.record();f();e.record();T.cuda.synchronize()
 n=max(3,min(100,int(.05/max(s.elapsed_time(e)/1e3,1e-7))));s.record()
 for _ in range(n):f()
 e.record();T.cuda.synchronize();return s.elapsed_time(e)/1e3/n
p=T.cuda.get_device_properties(0)
P("#env",datetime.datetime.utcnow().isoformat(),p.name,p.multi_processor_count,p.L2_cache_size,T.__version__,T.version.cuda,T.backends.cudnn.version(),sp.run(["nvidia-smi","--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit","--format=csv,noheader"],capture_output=1,text=1).stdout.strip().replace(",",";"))
x=T.zeros(1,device=C)
for n in(1,1000):
 def f():
  for _ in range(n):x.add_(1)
 P("launch",n,"%.4e"%(ti(f)/n))
for m in(1,4,16,64,256,1024,4096):
 n=m<<20;a=T.empty(n,dtype=T.uint8,device=C);b=T.empty_like(a);t=ti(lambda:b.copy_(a));P("copy",n,"%.4e"%t,"%.1f"%(2*n/t/1e9))
 a=T.randn(n//2,dtype=B,device=C);b=T.empty_like(a);t=ti(lambda:T.mul(a,2.,out=b));P("elementwise",n,"%.4e"%t,"%.1f"%(2*n/t/1e9))
 del a,b;T.cuda.empty_cache()
S=[(n,n,n)for n in(256,512,1024,2048,4096,6144,8192,12288,16384)]
L=[(12288,4096),(4096,4096),(16384,4096),(4096,16384),(4608,12288),(12288,1536),(6144,12288),(12288,6144)]
S+=[(M,n,k)for M in(128,256,512,1024,2048,4096,8192,16384)for n,k in L]
o=T.ones((),device=C)
for d in("bf16","fp8"):
 for M,N,K in S:
  try:
   a=T.randn(M,K,device=C,dtype=B);b=T.randn(N,K,device=C,dtype=B)
   if d=="bf16":f=lambda:T.mm(a,b.t())
   else:a8,b8=a.to(T.float8_e4m3fn),b.to(T.float8_e4m3fn);f=lambda:T._scaled_mm(a8,b8.t(),scale_a=o,scale_b=o,out_dtype=B)
   t=ti(f);P("gemm",d,M,N,K,"%.4e"%t,"%.1f"%(2*M*N*K/t/1e12))
  except Exception as x:P("gemm",d,M,N,K,"error",repr(x)[:80])
  T.cuda.empty_cache()
from torch.nn.attention import sdpa_kernel as K,SDPBackend as Q
A=T.nn.functional.scaled_dot_product_attention;h,d=32,128
for k in("FLASH_ATTENTION","MATH","EFFICIENT_ATTENTION","CUDNN_ATTENTION"):
 for s in(512,1024,2048,4096,8192):
  b=max(1,16384//s)
  for c in(0,1):
   try:
    q,kk,v=(T.randn(b,h,s,d,device=C,dtype=B,requires_grad=True)for _ in"123")
    with K(getattr(Q,k)):
     tf=ti(lambda:A(q,kk,v,is_causal=bool(c)));g=T.randn_like(q)
     tb=ti(lambda:T.autograd.grad(A(q,kk,v,is_causal=bool(c)),(q,kk,v),g))
    fl=4*b*h*s*s*d*(.5 if c else 1);P("attn",k,b,h,s,d,c,"%.4e"%tf,"%.1f"%(fl/tf/1e12),"%.4e"%tb,"%.1f"%(3.5*fl/tb/1e12))
   except Exception as x:P("attn",k,b,h,s,d,c,"error",repr(x)[:80])
   q=kk=v=g=None;T.cuda.empty_cache()
open(os.environ.get("OUT",".")+"/microbench.csv","w").write("\n".join(R)+"\n")
