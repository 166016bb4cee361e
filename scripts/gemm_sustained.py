#!/usr/bin/env python3
"""GEMM throughput at sustained clocks for docs/calibration.md (second run): each shape is
warmed for 100 ms, then timed over 200 ms of back-to-back runs; the grid is run twice in two
shuffled orders (seeds 0 and 1) so that neighbours and the GPU's thermal and power state do
not bias a shape, and nvidia-smi reads the SM clock, power and temperature after each pass.
Writes $OUT/gemm2.csv; docs/data/h100_gemm_sustained.csv is its output on an H100.
"""
import datetime,os,random,subprocess as sp,torch
T=torch;C="cuda";B=T.bfloat16;R=[]
def P(*f):
 l=",".join(map(str,f));R.append(l);print(l,flush=True)
E=T.cuda.Event
def ti(f,w=.1,m=.2):
 f();T.cuda.synchronize();s,e=E(enable_timing=1),E(enable_timing=1)
 s.record();f();e.record();T.cuda.synchronize();t1=max(s.elapsed_time(e)/1e3,1e-6)
 for _ in range(int(w/t1)):f()
 n=max(5,int(m/t1));s.record()
 for _ in range(n):f()
 e.record();T.cuda.synchronize();return s.elapsed_time(e)/1e3/n
q=lambda k:sp.run(["nvidia-smi","--query-gpu="+k,"--format=csv,noheader"],capture_output=1,text=1).stdout.strip().replace(",",";")
p=T.cuda.get_device_properties(0)
P("#env",datetime.datetime.utcnow().isoformat(),p.name,p.multi_processor_count,T.__version__,T.version.cuda,q("driver_version,clocks.max.sm,power.limit"))
S=[(n,n,n)for n in(1024,2048,4096,6144,8192,12288,16384)]
L=[(12288,4096),(4096,4096),(16384,4096),(4096,16384),(4608,12288),(12288,1536),(6144,12288),(12288,6144)]
S+=[(M,n,k)for M in(128,256,512,1024,2048,4096,8192,16384)for n,k in L]
G=[(d,)+s for d in("bf16","fp8")for s in S]
o=T.ones((),device=C)
for r in(0,1):
 random.Random(r).shuffle(G)
 for d,M,N,K in G:
  try:
   a=T.randn(M,K,device=C,dtype=B);b=T.randn(N,K,device=C,dtype=B)
   if d=="bf16":f=lambda:T.mm(a,b.t())
   else:a8,b8=a.to(T.float8_e4m3fn),b.to(T.float8_e4m3fn);f=lambda:T._scaled_mm(a8,b8.t(),scale_a=o,scale_b=o,out_dtype=B)
   t=ti(f);P("gemm",r,d,M,N,K,"%.4e"%t,"%.1f"%(2*M*N*K/t/1e12))
  except Exception as x:P("gemm",r,d,M,N,K,"error",repr(x)[:80])
 P("#clocks",r,q("clocks.sm,power.draw,temperature.gpu"))
open(os.environ.get("OUT",".")+"/gemm2.csv","w").write("\n".join(R)+"\n")
