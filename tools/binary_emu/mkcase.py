import random, sys, itertools
seed = int(sys.argv[1]); nsp = int(sys.argv[2]); random.seed(seed)
shape = [random.choice([1,2,3,5,7]) for _ in range(nsp-1)] + [random.choice([1,5,31,32,33,64,65,100])]
ext = [random.randint(1,4) for _ in range(nsp)]
if random.random() < 0.2: ext[-1] = random.randint(30, 70)
org = [random.randint(-3, 3) for _ in range(nsp)]
if random.random() < 0.2: org[-1] = random.randint(-40, 40)
taps = [t for t in itertools.product(*[range(e) for e in ext]) if random.random() < 0.6]
if not taps: taps = [tuple(0 for _ in ext)]
taps = [tuple(t[d] - ext[d]//2 + org[d] for d in range(nsp)) for t in taps]
taps.sort()
taps = taps[:1024]
print(*shape); print(random.randint(0,1), random.randint(0,1)); print(len(taps))
for t in taps: print(*t)
