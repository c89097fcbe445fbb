# dump_analysis.py DUMP N -- an NDF_ECC2_PROF_DUMP file of ndf_ecc_strip3 at N^3 (V construction, 16 columns per
# lane, the warps' own shares: the segment count assumes 953d7ae's plan), gunzipped: per-warp march times by
# segments, SM parity, border tiles, warp index; the slowest SMs' blocks; call-to-call correlations (r14c).
import sys, statistics as st, collections
f=sys.argv[1]; N=int(sys.argv[2]); CONS=0
calls=[]; cur=None
for l in open(f):
    if l.startswith('#'):
        cur=[]; calls.append(cur); continue
    cur.append([int(x) for x in l.split()])
nz=ny=nx=N; W=16
ntx=(nx+W-1)//W; nty=(ny+CONS+30)//31; L=nz+CONS; U=ntx*nty*L
nb=len(calls[-1]); tpi=nb*8
print('calls',len(calls),'blocks',nb,'U',U,'share',U/tpi)
def segs(wi):
    u0=wi*U//tpi; u1=(wi+1)*U//tpi
    n=0;u=u0
    while u<u1:
        t=u//L; z0=u-t*L; k=min(L-z0,u1-u); n+=1; u+=k
    return n, u0//L
agg=collections.defaultdict(list)
for c in calls[-20:]:
    for r in c:
        b,sm=r[0],r[1]; s=r[2:9]; we=r[9:17]
        for w in range(8):
            wi=b*8+w; ns,tile=segs(wi)
            d=(we[w]-s[3])/1000
            agg['all'].append(d); agg['seg%d'%ns].append(d)
            agg['sm%d'%(sm%2)].append(d)
            agg['tx%d'%(tile%ntx in (0,ntx-1))].append(d)
            agg['ty_last%d'%(tile//ntx==nty-1)].append(d)
            agg['w%d'%w].append(d)
for k in sorted(agg):
    v=sorted(agg[k]); print('%-10s n %6d median %7.1f p10 %7.1f p90 %7.1f max %7.1f'%(k,len(v),v[len(v)//2],v[len(v)//10],v[9*len(v)//10],v[-1]))
# per SM: block march (stamp4-stamp3) of its blocks; rank SMs by slowest
c=calls[-1]
bysm=collections.defaultdict(list)
for r in c:
    s=r[2:9]; bysm[r[1]].append(((s[4]-s[3])/1000, r[0], (s[3])/1000))
v=sorted(bysm.items(), key=lambda kv:-max(x[0] for x in kv[1]))
for sm,l in v[:8]+v[-4:]: print('sm',sm,[('%.1f'%a,b,'%.1f'%t) for a,b,t in l])
# within-block spread: max-min warp time per block
sp=[]
for c in calls[-20:]:
    for r in c:
        s=r[2:9]; we=r[9:17]; d=[(x-s[3])/1000 for x in we]; sp.append(max(d)-min(d))
sp.sort(); print('within-block spread median %.1f p90 %.1f max %.1f'%(sp[len(sp)//2],sp[9*len(sp)//10],sp[-1]))
# block march time vs SM: consistent across calls? correlation of per-SM time between calls
def smt(c):
    d={}
    for r in c: d.setdefault(r[1],[]).append((r[2+4]-r[2+3])/1000)
    return {k:max(v) for k,v in d.items()}
a=smt(calls[-1]); b=smt(calls[-2]); ks=sorted(a)
import math
xa=[a[k] for k in ks]; xb=[b[k] for k in ks]
ma=sum(xa)/len(xa); mb=sum(xb)/len(xb)
cov=sum((p-ma)*(q-mb) for p,q in zip(xa,xb)); va=sum((p-ma)**2 for p in xa); vb=sum((q-mb)**2 for q in xb)
print('per-SM slowest-block march, corr between two calls: %.2f'%(cov/math.sqrt(va*vb)))
def blk(c): return {r[0]:(r[6]-r[5])/1000 for r in c}
a=blk(calls[-1]); b=blk(calls[-2]); ks=sorted(a)
xa=[a[k] for k in ks]; xb=[b[k] for k in ks]; ma=sum(xa)/len(xa); mb=sum(xb)/len(xb)
cov=sum((p-ma)*(q-mb) for p,q in zip(xa,xb)); va=sum((p-ma)**2 for p in xa); vb=sum((q-mb)**2 for q in xb)
print('per-block march, corr between two calls: %.2f'%(cov/math.sqrt(va*vb)))
