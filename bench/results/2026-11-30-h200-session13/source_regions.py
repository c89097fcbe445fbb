import csv,sys,re,collections
f=sys.argv[1]; nw=float(sys.argv[2])
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ia=hdr.index('Instructions Executed'); iss=hdr.index('Warp Stall Sampling (All Samples)'); isrc=hdr.index('Source')
ins=[]
for r in data:
    if len(r)<=ia: continue
    try: n=int(r[ia]); st=int(r[iss])
    except: continue
    ins.append((r[isrc].strip(),n,st))
tot=sum(n for _,n,_ in ins); tots=sum(s for _,_,s in ins)
print('total warp instr %.0f per warp-tile %.0f, stall samples %d, static %d'%(tot,tot/nw,tots,len(ins)))
# segments: split at BAR and at big changes; print segments with >1% of instrs
seg=[];cur=[0,0,0,collections.Counter(),0]
def flush(i):
    if cur[1]>0: seg.append((cur[0],i,cur[1],cur[2],cur[3].most_common(6)))
for i,(s,n,st) in enumerate(ins):
    op=s.split()[0] if s else ''
    if op.startswith('@'): op=s.split()[1]
    op=op.split('.')[0]
    cur[1]+=n;cur[2]+=st;cur[3][op]+=n
    if op in('BAR','EXIT','BRA','RET','WARPSYNC') and (i-cur[0])>40:
        flush(i); cur=[i+1,0,0,collections.Counter(),0]
flush(len(ins))
for a,b,n,st,ops in seg:
    if n/tot>0.01 or st/tots>0.01:
        print('%5d-%5d instr %5.1f%% (%6.0f/wt) stalls %5.1f%%  %s'%(a,b,100*n/tot,n/nw,100*st/tots,' '.join('%s:%.0f'%(o,c/nw) for o,c in ops)))
