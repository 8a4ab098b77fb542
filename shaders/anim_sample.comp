#version 450
#extension GL_GOOGLE_include_directive : require
// anim_sample.comp: the kernel anim.RegisterSampleKernel registers, the GLSL port of anim's sampler
// (anim/sample.go: sampleOne and the functions it calls;
// anim/uniform_sample.go: sampleUniform for uniform clips). It decodes the
// same blob words and keeps the same cursor words as the Go code, with the
// same float32 operations in the same order (`precise`: no fused
// multiply-add, no reassociation), so its poses match the CPU's.
//
// Both clip codecs, chosen per character by the clip header's flags word
// (chFlags, word 9): 0 = curve (cursor-driven sequential decode), 1 =
// uniform (frame-addressable: frames floor(t*rate) and the next are read
// directly from their segments and interpolated; the uniform path neither
// reads nor writes the cursor, which is still copied in 2 -> out 1 unless
// flag 1). Any other flags value gives the identity pose.
//
// Work item i = character i.
//   in 0   blob words (uint, Whole): anim.Blob.Words()
//   in 1   SampleInput {uint clip; float time;} (8 bytes) per character
//   in 2   cursor of each character, params[1] words (read)
//   out 0  local pose of each character: params[0] bones x 3 vec4
//          (anim.PoseFloats = kernels.Transform: rot, trans, scale)
//   out 1  cursor of each character, params[1] words (written)
// params[0] bones per pose, params[1] cursor words per character,
// params[2] flags: 1 = out 1 is the memory of in 2 (update the cursors in
// place, no copy).
//
// Bounds: every blob read is clamped into the blob binding and every stream
// read into its clip's stream, and every loop is bounded, so no input or
// cursor content can read outside the buffers or hang. The host validates
// clip offsets (anim.SampleJob.Validate); here a character whose clip
// record does not start with "CLIP", or needs more bones or cursor words
// than the strides (a uniform clip: more than 3 animated tracks per bone),
// gets the identity pose. Uniform reads: a track's <= 57 bits are three
// stream words read through the same clamp, so a bad rate byte, segment
// table entry or bits per frame reads wrong words of the clip's stream,
// never outside it.
//
// Loop passes: lavapipe (llvmpipe's gallivm) keeps one loop counter per
// invocation, shared by the SIMD lanes it runs together, for all loops of
// the shader together: every pass of every loop takes one from it (the
// bound in anim/gpu_bound.go also counts each loop's exit test, a safe
// over-count), a loop that no lane of the vector reaches takes nothing, and once it is spent every later loop runs at most once,
// silently. So the code keeps loop passes few where they multiply: a
// record is read by straight code (three components and a guarded fourth,
// no component loop), a need frame's tracks and records are one loop (one
// pass per track plus one per record, not a record loop per track), the
// cursor is copied eight words a pass, and the constant pose is one loop
// over the bones. What remains is counted by anim (gpuLoopBound in
// anim/gpu_bound.go, which must follow this code's loops), and the kernel
// refuses, on a device with such a budget, a blob with a clip that could
// need more (its tasks fail with an error naming the clip) rather than
// return a wrong pose.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BlobWords { uint words[]; };
layout(std430, set = 0, binding = 1) readonly buffer Inputs { uvec2 inputs[]; };
layout(std430, set = 0, binding = 2) readonly buffer CursorsIn { uint curIn[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Poses { vec4 poses[]; };
layout(std430, set = 0, binding = 5) buffer Cursors { uint cur[]; };

const uint CLIP_TAG = 0x50494C43u; // "CLIP"
const uint NO_NEED = 0xffffffffu;

// Clip header words (anim/internal/format/layout.go Ch*).
const uint CH_BONES = 3u, CH_RATE = 4u, CH_FRAMES = 5u, CH_SEGFRAMES = 6u, CH_SEGMENTS = 7u,
           CH_SLOTS = 8u, CH_DEFAULT = 10u, CH_TRACKS = 11u, CH_SEGTABLE = 12u, CH_STREAM = 13u,
           CH_STREAMWORDS = 14u, CH_CURSORWORDS = 19u, CLIP_HEADER_WORDS = 24u, CH_FLAGS = 9u,
           CH_RANGES = 21u, CH_IDENTITY = 22u;

// Clip codecs (chFlags).
const uint CLIP_CURVE = 0u, CLIP_UNIFORM = 1u;

// Cursor words (anim/internal/format/cursor.go Cur*, Sl*).
const uint CUR_CLIP = 0u, CUR_SEG = 1u, CUR_POS = 2u, CUR_LOCAL = 3u, CUR_NEXT = 4u, CUR_BLOB = 5u, CUR_HEADER = 8u;
const uint BLOB_CRC_WORD = 3u; // the first blob's checksum: CUR_BLOB for a clip without an identity
const uint SLOT_WORDS = 64u;
const uint SL_HEAD = 0u, SL_FRESH = 1u, SL_T2 = 2u, SL_T3 = 3u, SL_T1 = 4u, SL_INVH = 5u,
           SL_PARAMS = 6u, SL_COEF = 8u, SL_RING = 24u, RING_WORDS = 10u;

const uint TRACK_ROT = 1u;
const uint MODE_ALL = 4u;
const uint END_PAIR = 0x80000000u; // format.ParamEndPair
const uint RICE_ESCAPE = 24u;
const uint FLAG_IN_PLACE = 1u;

uint gNW;      // words in the blob binding (>= CLIP_HEADER_WORDS)
uint gSB;      // first word of the clip's stream
uint gSN;      // words in the clip's stream (>= 1)
uint gTracks;  // first word of the clip's track table

uint W(uint i) { return words[min(i, gNW - 1u)]; }
float WF(uint i) { return uintBitsToFloat(W(i)); }
uint S(uint i) { return W(gSB + min(i, gSN - 1u)); }
bool isNaN(uint b) { return (b & 0x7fffffffu) > 0x7f800000u; }

// bitsAt reads n <= 32 bits at stream bit position pos, LSB first.
uint bitsAt(uint pos, uint n) {
    uint i = pos >> 5u, sh = pos & 31u;
    uint v = S(i) >> sh;
    if (sh != 0u) {
        v |= S(i + 1u) << (32u - sh);
    }
    return n >= 32u ? v : v & ((1u << n) - 1u);
}

// rice decodes a Rice code with parameter k (<= 31) at pos and advances pos:
// q zero bits, a one, k low bits; 24 zeros escape to a raw 32-bit value.
uint rice(inout uint pos, uint k) {
    int q = findLSB(bitsAt(pos, 32u));
    if (q < 0 || uint(q) >= RICE_ESCAPE) {
        uint v = bitsAt(pos + RICE_ESCAPE, 32u);
        pos += RICE_ESCAPE + 32u;
        return v;
    }
    pos += uint(q) + 1u;
    uint v = (uint(q) << k) | bitsAt(pos, k);
    pos += k;
    return v;
}

int unzigzag(uint u) { return int(u >> 1u) ^ -int(u & 1u); }

// predict: anim's predict, integer division truncated toward zero as Go's.
int predict(uint ta, uint tb, uint t, int ia, int ib, uint pm) {
    int d = ib - ia;
    if (pm == 0u || tb <= ta || tb - ta >= 65536u || t - tb > 63u || d <= -(1 << 23) || d >= (1 << 23)) {
        return ib;
    }
    int den = int(tb - ta);
    if (pm == 2u) {
        den *= 2;
    }
    int num = d * int(t - tb);
    int q = int(uint(abs(num)) / uint(den));
    return ib + (num < 0 ? -q : q);
}

uint ncompOf(uint kind, uint mode) { return (kind == TRACK_ROT && mode == MODE_ALL) ? 4u : 3u; }

uint readParams(inout uint pos, uint kind) {
    uint mode = bitsAt(pos, 3u);
    uint disc = bitsAt(pos + 3u, 1u);
    uint pm = bitsAt(pos + 4u, 2u);
    uint kt = bitsAt(pos + 6u, 4u);
    uint lin = bitsAt(pos + 10u, 1u);
    pos += 11u;
    uint endPair = 0u; // only with disc: anim's readParams
    if (disc == 1u) {
        endPair = bitsAt(pos, 1u);
        pos += 1u;
    }
    uint p = mode | disc << 3u | kt << 4u | pm << 28u | lin << 30u | endPair << 31u;
    // The components' Rice parameters, straight (no loop: see the header).
    p |= bitsAt(pos, 5u) << 8u | bitsAt(pos + 5u, 5u) << 13u | bitsAt(pos + 10u, 5u) << 18u;
    pos += 15u;
    if (ncompOf(kind, mode) == 4u) {
        p |= bitsAt(pos, 5u) << 23u;
        pos += 5u;
    }
    return p;
}

// readPoint reads a point after (t2, i2), (t3, i3): anim's readPoint.
uint readPoint(inout uint pos, uint params, uint kind, uint t2, uint t3, ivec4 i2, ivec4 i3, out ivec4 idx) {
    uint t = t3 + rice(pos, params >> 4u & 15u) + 1u - (params >> 3u & 1u);
    uint pm = params >> 28u & 3u;
    uint nc = ncompOf(kind, params & 7u);
    idx = ivec4(0);
    for (uint c = 0u; c < nc; c++) {
        idx[c] = predict(t2, t3, t, i2[c], i3[c], pm) + unzigzag(rice(pos, params >> (8u + 5u * c) & 31u));
    }
    return t;
}

uint ringAt(uint cs, uint k) { return cs + SL_RING + (k & 3u) * RING_WORDS; }

// morePoints: format.MorePoints (the track has a point after its window's
// p3: p3 is before the segment end, or is the first of an end pair).
bool morePoints(uint params, uint t2, uint t3, uint segEnd) {
    return t3 != segEnd || ((params & END_PAIR) != 0u && t2 != segEnd);
}

// shiftIn appends point (t, idx) to a slot's window ring (cs: the slot's
// first word in cur).
void shiftIn(uint cs, uint t, ivec4 idx) {
    uint head = cur[cs + SL_HEAD] & 3u;
    uint e = ringAt(cs, head);
    cur[e] = t;
    cur[e + 1u] = uint(idx.x);
    cur[e + 2u] = uint(idx.y);
    cur[e + 3u] = uint(idx.z);
    cur[e + 4u] = uint(idx.w);
    cur[cs + SL_HEAD] = (head + 1u) & 3u;
    cur[cs + SL_FRESH] = min(cur[cs + SL_FRESH] + 1u, 4u);
    cur[cs + SL_T2] = cur[cs + SL_T3];
    cur[cs + SL_T3] = t;
}

// readRecord reads a slot's next point into its ring (integers only).
void readRecord(inout uint pos, uint kind, uint cs) {
    uint head = cur[cs + SL_HEAD] & 3u;
    uint e2 = ringAt(cs, head + 2u), e3 = ringAt(cs, head + 3u), e = ringAt(cs, head);
    uint params = cur[cs + SL_PARAMS];
    uint t2 = cur[cs + SL_T2], t3 = cur[cs + SL_T3];
    uint t = t3 + rice(pos, params >> 4u & 15u) + 1u - (params >> 3u & 1u);
    uint pm = params >> 28u & 3u;
    // Three components and a guarded fourth, in stream order: straight
    // code, no component loop (loop passes count: see the header).
    int p0 = predict(t2, t3, t, int(cur[e2 + 1u]), int(cur[e3 + 1u]), pm);
    cur[e + 1u] = uint(p0 + unzigzag(rice(pos, params >> 8u & 31u)));
    int p1 = predict(t2, t3, t, int(cur[e2 + 2u]), int(cur[e3 + 2u]), pm);
    cur[e + 2u] = uint(p1 + unzigzag(rice(pos, params >> 13u & 31u)));
    int p2 = predict(t2, t3, t, int(cur[e2 + 3u]), int(cur[e3 + 3u]), pm);
    cur[e + 3u] = uint(p2 + unzigzag(rice(pos, params >> 18u & 31u)));
    uint w = 0u;
    if (ncompOf(kind, params & 7u) == 4u) {
        int p3 = predict(t2, t3, t, int(cur[e2 + 4u]), int(cur[e3 + 4u]), pm);
        w = uint(p3 + unzigzag(rice(pos, params >> 23u & 31u)));
    }
    cur[e + 4u] = w;
    cur[e] = t;
    cur[cs + SL_HEAD] = (head + 1u) & 3u;
    cur[cs + SL_FRESH] = min(cur[cs + SL_FRESH] + 1u, 4u);
    cur[cs + SL_T2] = t3;
    cur[cs + SL_T3] = t;
}

// seekSegment loads every track's first points from the segment header at
// pos; returns the position of the first record, next = first need frame.
uint seekSegment(uint pos, uint segEnd, uint nslot, uint cb, out uint next) {
    next = NO_NEED;
    for (uint s = 0u; s < nslot; s++) {
        uint d = gTracks + 4u * s;
        uint kind = W(d) >> 16u;
        uint width = clamp(W(d + 1u), 1u, 32u);
        uint cs = cb + CUR_HEADER + s * SLOT_WORDS;
        uint params = readParams(pos, kind);
        // The first point's components, straight (no loop).
        uint sh = 32u - width;
        ivec4 i1 = ivec4(int(bitsAt(pos, width) << sh) >> sh, int(bitsAt(pos + width, width) << sh) >> sh,
                         int(bitsAt(pos + 2u * width, width) << sh) >> sh, 0);
        pos += 3u * width;
        if (ncompOf(kind, params & 7u) == 4u) {
            i1.w = int(bitsAt(pos, width) << sh) >> sh;
            pos += width;
        }
        ivec4 i2, i3;
        uint t2 = readPoint(pos, params, kind, 0u, 0u, i1, i1, i2);
        uint t3 = t2;
        i3 = i2;
        if (t2 != segEnd || (params & END_PAIR) != 0u) {
            t3 = readPoint(pos, params, kind, 0u, t2, i1, i2, i3);
        }
        cur[cs + SL_PARAMS] = params;
        cur[cs + SL_HEAD] = 0u;
        cur[cs + SL_FRESH] = 0u;
        cur[cs + SL_T2] = 0u;
        cur[cs + SL_T3] = 0u;
        shiftIn(cs, 0u, i1); // p0 repeats p1 at the segment start
        shiftIn(cs, 0u, i1);
        shiftIn(cs, t2, i2);
        shiftIn(cs, t3, i3);
        if (morePoints(params, t2, t3, segEnd) && t2 < next) {
            next = t2;
        }
    }
    return pos;
}

// dequant rebuilds a point's value from its indices (anim's dequant).
vec4 dequant(uint kind, uint mode, float step, ivec4 idx) {
    precise float a0 = float(idx.x) * step;
    precise float a1 = float(idx.y) * step;
    precise float a2 = float(idx.z) * step;
    if (kind != TRACK_ROT) {
        return vec4(a0, a1, a2, 0.0);
    }
    if (mode == MODE_ALL) {
        precise float a3 = float(idx.w) * step;
        return vec4(a0, a1, a2, a3);
    }
    precise float s = 1.0 - a0 * a0 - a1 * a1 - a2 * a2;
    precise float big = 0.0;
    if (s > 0.0) {
        big = sqrt(s);
    }
    switch (mode) {
    case 0u:
        return vec4(big, a0, a1, a2);
    case 1u:
        return vec4(a0, big, a1, a2);
    case 2u:
        return vec4(a0, a1, big, a2);
    }
    return vec4(a0, a1, a2, big);
}

// recip: 1/x as anim's recip (its table holds correctly rounded 1/n).
float recip(float x) {
    precise float r = 1.0 / x;
    return r;
}

// putCoef stores a slot's cubic coefficients c0..c3 from word c on.
void putCoef(uint c, vec4 c0, vec4 c1, vec4 c2, vec4 c3) {
    cur[c] = floatBitsToUint(c0.x);
    cur[c + 1u] = floatBitsToUint(c0.y);
    cur[c + 2u] = floatBitsToUint(c0.z);
    cur[c + 3u] = floatBitsToUint(c0.w);
    cur[c + 4u] = floatBitsToUint(c1.x);
    cur[c + 5u] = floatBitsToUint(c1.y);
    cur[c + 6u] = floatBitsToUint(c1.z);
    cur[c + 7u] = floatBitsToUint(c1.w);
    cur[c + 8u] = floatBitsToUint(c2.x);
    cur[c + 9u] = floatBitsToUint(c2.y);
    cur[c + 10u] = floatBitsToUint(c2.z);
    cur[c + 11u] = floatBitsToUint(c2.w);
    cur[c + 12u] = floatBitsToUint(c3.x);
    cur[c + 13u] = floatBitsToUint(c3.y);
    cur[c + 14u] = floatBitsToUint(c3.z);
    cur[c + 15u] = floatBitsToUint(c3.w);
}

// updateCoeffs decodes the window's fresh points (rotations aligned to the
// point before) and stores the cubic of [p1, p2]: anim's updateCoeffs and
// curveCoeffs.
void updateCoeffs(uint cs, uint kind, float step) {
    uint head = cur[cs + SL_HEAD] & 3u;
    uint mode = cur[cs + SL_PARAMS] & 7u;
    uint first = 4u - min(cur[cs + SL_FRESH], 4u);
    bool rot = kind == TRACK_ROT;
    vec4 p[4];
    float pt[4];
    for (uint k = 0u; k < 4u; k++) {
        uint e = ringAt(cs, head + k);
        pt[k] = float(cur[e]);
        if (k >= first) {
            ivec4 idx = ivec4(int(cur[e + 1u]), int(cur[e + 2u]), int(cur[e + 3u]), int(cur[e + 4u]));
            vec4 v = dequant(kind, mode, step, idx);
            if (rot && k > 0u) {
                vec4 r = p[k - 1u];
                precise float dot4 = v.x * r.x + v.y * r.y + v.z * r.z + v.w * r.w;
                if (dot4 < 0.0) {
                    v = -v;
                }
            }
            p[k] = v;
            cur[e + 5u] = floatBitsToUint(v.x);
            cur[e + 6u] = floatBitsToUint(v.y);
            cur[e + 7u] = floatBitsToUint(v.z);
            cur[e + 8u] = floatBitsToUint(v.w);
        } else {
            p[k] = uintBitsToFloat(uvec4(cur[e + 5u], cur[e + 6u], cur[e + 7u], cur[e + 8u]));
        }
    }
    uint c = cs + SL_COEF;
    precise float h = pt[2] - pt[1];
    precise float invH = 0.0;
    // The coefficients as vec4 operations, per component the same float
    // operations as the Go code's loop over components (no loop here:
    // loop passes count, see the header).
    if (!(h > 0.0)) {
        putCoef(c, p[2], vec4(0.0), vec4(0.0), vec4(0.0));
    } else if ((cur[cs + SL_PARAMS] >> 30u & 1u) == 1u) {
        // linear segment: c0 + u (p2 - p1)
        precise vec4 d = p[2] - p[1];
        putCoef(c, p[1], d, vec4(0.0), vec4(0.0));
        invH = recip(h);
    } else {
        precise float s1 = 1.0, s2 = 1.0;
        vec4 a0 = p[0], a3 = p[3];
        if (pt[0] == pt[1]) {
            a0 = p[1];
        } else {
            s1 = h * recip(pt[2] - pt[0]);
        }
        if (pt[3] == pt[2]) {
            a3 = p[2];
        } else {
            s2 = h * recip(pt[3] - pt[1]);
        }
        vec4 v1 = p[1], v2 = p[2];
        precise vec4 hm1 = (v2 - a0) * s1;
        precise vec4 hm2 = (a3 - v1) * s2;
        precise vec4 d = v2 - v1;
        precise vec4 c2 = 3.0 * d - 2.0 * hm1 - hm2;
        precise vec4 c3 = hm1 + hm2 - 2.0 * d;
        putCoef(c, v1, hm1, c2, c3);
        invH = recip(h);
    }
    cur[cs + SL_T1] = floatBitsToUint(pt[1]);
    cur[cs + SL_INVH] = floatBitsToUint(invH);
    cur[cs + SL_FRESH] = 0u;
}

// The uniform codec: anim/uniform_sample.go (sampleUniform and the
// functions it calls), the record format in anim/internal/format/uniform.go
// (written by anim/offline/uniform.go).
// ACL's bit-rate ladder (bits per component), and 1/float32(2^n - 1) for
// each entry as bits (the correctly rounded float32 the CPU's table holds).
const uint LADDER[16] = uint[16](0u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u, 19u);
const uint INV_LADDER[16] = uint[16](0x00000000u, 0x3e124925u, 0x3d888889u, 0x3d042108u, 0x3c820821u,
    0x3c010204u, 0x3b808081u, 0x3b004020u, 0x3a802008u, 0x3a001002u, 0x39800801u, 0x39000400u,
    0x38800200u, 0x38000100u, 0x37800080u, 0x36000010u);
const uint K255_BITS = 0x3b808081u;   // float32(1.0/255)
const uint K65535_BITS = 0x37800080u; // float32(1.0/65535)

// segByte reads byte k of the segment that starts at stream word segW.
uint segByte(uint segW, uint k) { return S(segW + (k >> 2u)) >> ((k & 3u) * 8u) & 0xffu; }

// bits96 extracts n <= 32 bits at bit o (o + n <= 96) of three stream
// words, LSB first.
uint bits96(uvec3 win, uint o, uint n) {
    uint j = min(o >> 5u, 2u), sh = o & 31u;
    uint v = win[j] >> sh;
    if (sh != 0u && j < 2u) {
        v |= win[j + 1u] << (32u - sh);
    }
    return n >= 32u ? v : v & ((1u << n) - 1u);
}

// uniDecode decodes animated track i (kind, clip range table at word rng)
// of one frame: segW is the segment's first stream word, nt the clip's
// animated tracks, pos the track's stream bit position in the frame
// (advanced past its bits). Rotations get their dropped component rebuilt;
// translations and scales have w = 0.
vec4 uniDecode(uint segW, uint nt, uint i, uint kind, uint rng, inout uint pos) {
    uint rb = segByte(segW, 4u + i);
    uint code = rb & 15u;
    uint n = LADDER[code];
    uint drop = rb >> 4u & 3u;
    uint r0 = 4u + nt + 6u * i; // the track's 6 range (or constant) bytes
    float k255 = uintBitsToFloat(K255_BITS);
    vec4 v = vec4(0.0);
    vec3 st;
    if (n == 0u) {
        float k65535 = uintBitsToFloat(K65535_BITS);
        for (uint k = 0u; k < 3u; k++) {
            uint j = k + (k >= drop ? 1u : 0u);
            uint u16 = segByte(segW, r0 + 2u * k) | segByte(segW, r0 + 2u * k + 1u) << 8u;
            precise float x = WF(rng + j) + WF(rng + 4u + j) * (float(u16) * k65535);
            st[k] = x;
            v[j] = x;
        }
    } else {
        // The track's 3n <= 57 bits lie in three words from pos's.
        uint w = pos >> 5u, sh = pos & 31u;
        uvec3 win = uvec3(S(w), S(w + 1u), S(w + 2u));
        float inv = uintBitsToFloat(INV_LADDER[code]);
        for (uint k = 0u; k < 3u; k++) {
            uint j = k + (k >= drop ? 1u : 0u);
            float cm = WF(rng + j), ce = WF(rng + 4u + j);
            precise float a = cm + ce * (float(segByte(segW, r0 + k)) * k255);
            precise float b = ce * (float(segByte(segW, r0 + 3u + k)) * k255) * inv;
            precise float x = a + b * float(bits96(win, sh + k * n, n));
            st[k] = x;
            v[j] = x;
        }
        pos += 3u * n;
    }
    if (kind == TRACK_ROT) {
        precise float s = st.x * st.x + st.y * st.y + st.z * st.z;
        precise float d = sqrt(max(1.0 - s, 0.0));
        v[drop] = d;
    }
    return v;
}

// uniFrame returns frame f's segment start word and its data's first
// stream bit (the frame's first track).
uint uniFrame(uint segt, uint nseg, uint L, uint nt, uint f, out uint segW) {
    uint s = min(f / L, nseg - 1u);
    uint l = f - s * L;
    uint segBits = W(segt + s) & ~31u;
    segW = segBits >> 5u;
    uint fb = S(segW);
    uint d = (4u + 7u * nt + 3u) & ~3u;
    return segBits + d * 8u + l * fb;
}

// Pose output: bone b's rotation, translation and scale vec4 indices.
uint gPose;            // first vec4 of the character's pose
uvec3 gSlot;           // vec4 offsets of (translation, rotation, scale) in a bone

void putBone(uint b, vec4 t, vec4 r, vec4 s) {
    uint o = gPose + 3u * b;
    poses[o + gSlot.x] = t;
    poses[o + gSlot.y] = r;
    poses[o + gSlot.z] = s;
}

// COPY_WORD copies cursor word k + j when it is below the stride (n words
// from k on).
#define COPY_WORD(j) if (n > j) { cur[cb + k + j] = curIn[cb + k + j]; }

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint bones = pc.params[0];
    uint stride = pc.params[1];
    uint flags = pc.params[2];
    gPose = item * bones * 3u;
    gSlot = uvec3(1u, 0u, 2u);
    uint cb = item * stride;

    // The cursor: out 1 starts undefined unless it is in 2's memory.
    // Eight words a pass (loop passes count: see the header).
    if ((flags & FLAG_IN_PLACE) == 0u) {
        for (uint k = 0u; k < stride; k += 8u) {
            uint n = stride - k;
            cur[cb + k] = curIn[cb + k];
            COPY_WORD(1u)
            COPY_WORD(2u)
            COPY_WORD(3u)
            COPY_WORD(4u)
            COPY_WORD(5u)
            COPY_WORD(6u)
            COPY_WORD(7u)
        }
    }

    gNW = uint(words.length());
    uvec2 inp = inputs[item];
    uint clip = inp.x;
    uint c4 = clip >> 2u;
    bool ok = gNW >= CLIP_HEADER_WORDS && (clip & 3u) == 0u && c4 <= gNW - CLIP_HEADER_WORDS && words[c4] == CLIP_TAG;
    uint nb = 0u, nslot = 0u, frames = 0u, L = 0u, nseg = 0u, codec = 0u;
    if (ok) {
        nb = W(c4 + CH_BONES);
        nslot = W(c4 + CH_SLOTS);
        frames = W(c4 + CH_FRAMES);
        L = W(c4 + CH_SEGFRAMES);
        nseg = W(c4 + CH_SEGMENTS);
        codec = W(c4 + CH_FLAGS);
        // Curve clips keep a cursor slot per animated track; uniform clips
        // keep none, and a valid one has at most 3 tracks per bone.
        ok = nb <= bones && stride >= CUR_HEADER &&
             (codec == CLIP_UNIFORM ? nslot <= 3u * nb : codec == CLIP_CURVE && nslot <= (stride - CUR_HEADER) / SLOT_WORDS) &&
             frames >= 1u && L >= 1u && nseg >= 1u && W(c4 + CH_STREAMWORDS) >= 1u;
    }
    // Constant tracks: the default pose; identity for extra bones, and
    // for every bone of an invalid clip. One loop (loop passes count).
    uint def = ok ? c4 + W(c4 + CH_DEFAULT) / 4u : 0u;
    for (uint b = 0u; b < bones; b++) {
        if (ok && b < nb) {
            uint w = def + 12u * b;
            putBone(b, uintBitsToFloat(uvec4(W(w), W(w + 1u), W(w + 2u), W(w + 3u))),
                    uintBitsToFloat(uvec4(W(w + 4u), W(w + 5u), W(w + 6u), W(w + 7u))),
                    uintBitsToFloat(uvec4(W(w + 8u), W(w + 9u), W(w + 10u), W(w + 11u))));
        } else {
            putBone(b, vec4(0.0), vec4(0.0, 0.0, 0.0, 1.0), vec4(1.0, 1.0, 1.0, 0.0));
        }
    }
    if (!ok) {
        return;
    }
    float rate = WF(c4 + CH_RATE);

    // Time to frame, clamped; within 1/1000 frame of a sample snaps to it.
    precise float f = uintBitsToFloat(inp.y) * rate;
    if (isNaN(inp.y) || !(f > 0.0)) {
        f = 0.0;
    }
    float mf = float(frames - 1u);
    if (f > mf) {
        f = mf;
    }
    precise float r = floor(f + 0.5);
    if (f - r < 1e-3 && r - f < 1e-3) {
        f = r;
    }
    uint seg = uint(f) / L;
    if (seg >= nseg) {
        seg = nseg - 1u;
    }
    precise float local = f - float(seg * L);
    uint segEnd = min(L, frames - 1u - seg * L);

    if (nslot == 0u) {
        return;
    }
    gTracks = c4 + W(c4 + CH_TRACKS) / 4u;
    gSB = c4 + W(c4 + CH_STREAM) / 4u;
    gSN = W(c4 + CH_STREAMWORDS);
    uint segt = c4 + W(c4 + CH_SEGTABLE) / 4u;

    if (codec == CLIP_UNIFORM) {
        // Frame-addressable: decode frames f0 and f1 (each from its own
        // segment) and interpolate; the cursor is neither read nor written.
        uint f0 = min(uint(f), frames - 1u);
        precise float alpha = f - float(f0);
        uint f1 = min(f0 + 1u, frames - 1u);
        uint seg0, seg1;
        uint pos0 = uniFrame(segt, nseg, L, nslot, f0, seg0);
        uint pos1 = uniFrame(segt, nseg, L, nslot, f1, seg1);
        uint rng = c4 + W(c4 + CH_RANGES) / 4u;
        for (uint s = 0u; s < nslot; s++) {
            uint d0 = W(gTracks + 4u * s);
            uint kind = d0 >> 16u;
            vec4 q0 = uniDecode(seg0, nslot, s, kind, rng + 8u * s, pos0);
            vec4 q1 = uniDecode(seg1, nslot, s, kind, rng + 8u * s, pos1);
            uint bone = d0 & 0xffffu;
            if (bone >= nb || kind > 2u) {
                continue;
            }
            uint o = gPose + 3u * bone;
            if (kind != TRACK_ROT) {
                precise vec4 v = q0 + (q1 - q0) * alpha;
                poses[o + (kind == 0u ? gSlot.x : gSlot.z)].xyz = v.xyz;
                continue;
            }
            precise float dot4 = q0.x * q1.x + q0.y * q1.y + q0.z * q1.z + q0.w * q1.w;
            if (dot4 < 0.0) {
                q1 = -q1;
            }
            precise vec4 v = q0 + (q1 - q0) * alpha;
            precise float n = v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
            vec4 q = vec4(0.0, 0.0, 0.0, 1.0);
            if (n > 0.0) {
                precise float inv = 1.0 / sqrt(n);
                q = v * inv;
            }
            poses[o + gSlot.y] = q;
        }
        return;
    }

    uint segStart = W(segt + min(seg, nseg)), segStop = W(segt + min(seg + 1u, nseg));

    uint pos = cur[cb + CUR_POS], next = cur[cb + CUR_NEXT];
    uint lastLocal = cur[cb + CUR_LOCAL];
    // The clip's identity (format.CursorIdentity): its own checksum, or
    // for a clip written without one the first blob's.
    uint ident = W(c4 + CH_IDENTITY);
    if (ident == 0u) {
        ident = W(BLOB_CRC_WORD);
    }
    if (cur[cb + CUR_CLIP] != clip || cur[cb + CUR_SEG] != seg || cur[cb + CUR_BLOB] != ident ||
        isNaN(lastLocal) || local < uintBitsToFloat(lastLocal) || pos < segStart || pos > segStop) {
        pos = seekSegment(segStart, segEnd, nslot, cb, next);
        cur[cb + CUR_CLIP] = clip;
        cur[cb + CUR_SEG] = seg;
        cur[cb + CUR_BLOB] = ident;
    }
    // Read the records playback needs by now, need frame by need frame, in
    // track order (the stream's order). next grows every round, so the
    // loop runs at most once per frame of the segment. A round is one
    // loop over tracks and records: a pass either reads the current
    // track's next record (at most 64 a track a round; valid data has at
    // most two, a discontinuity) or moves to the next track, so a round
    // takes one pass per track plus one per record (a record loop inside
    // a track loop would add an exit test per track; see the header).
    bool reseeked = false;
    for (uint round = 0u; round <= 65536u && float(next) <= local && pos < segStop; round++) {
        uint F = next;
        next = NO_NEED;
        uint s = 0u, g = 0u;
        for (uint it = 0u; it < 65u * nslot && s < nslot; it++) {
            uint cs = cb + CUR_HEADER + s * SLOT_WORDS;
            if (g < 64u && cur[cs + SL_T2] == F && morePoints(cur[cs + SL_PARAMS], cur[cs + SL_T2], cur[cs + SL_T3], segEnd) && pos < segStop) {
                readRecord(pos, W(gTracks + 4u * s) >> 16u, cs);
                g++;
            } else {
                uint t2 = cur[cs + SL_T2];
                if (morePoints(cur[cs + SL_PARAMS], t2, cur[cs + SL_T3], segEnd) && t2 < next) {
                    next = t2;
                }
                s++;
                g = 0u;
            }
        }
        if (next <= F) {
            // Only a scribbled cursor gets here: start the segment over, once.
            if (reseeked) {
                break;
            }
            reseeked = true;
            pos = seekSegment(segStart, segEnd, nslot, cb, next);
        }
    }
    cur[cb + CUR_POS] = pos;
    cur[cb + CUR_NEXT] = next;
    cur[cb + CUR_LOCAL] = floatBitsToUint(local);

    // Evaluate every animated track.
    for (uint s = 0u; s < nslot; s++) {
        uint cs = cb + CUR_HEADER + s * SLOT_WORDS;
        uint d = gTracks + 4u * s;
        uint d0 = W(d);
        uint kind = d0 >> 16u;
        uint t2 = cur[cs + SL_T2];
        // endPairAhead (anim): the end pair is read, p1 is before it.
        bool endPairAhead = (cur[cs + SL_PARAMS] & END_PAIR) != 0u && cur[cs + SL_T3] == segEnd &&
                            cur[ringAt(cs, cur[cs + SL_HEAD] + 1u)] < segEnd;
        if (local >= float(t2) && (t2 < segEnd || endPairAhead)) {
            // Past the last record: step onto the final interval (at the
            // end of a track with an end pair, onto its second point).
            uint last = ringAt(cs, cur[cs + SL_HEAD] + 3u);
            shiftIn(cs, cur[cs + SL_T3], ivec4(int(cur[last + 1u]), int(cur[last + 2u]), int(cur[last + 3u]), int(cur[last + 4u])));
        }
        if (cur[cs + SL_FRESH] != 0u) {
            updateCoeffs(cs, kind, WF(d + 2u));
        }
        precise float u = (local - uintBitsToFloat(cur[cs + SL_T1])) * uintBitsToFloat(cur[cs + SL_INVH]);
        if (u < 0.0) {
            u = 0.0;
        } else if (u > 1.0) {
            u = 1.0;
        }
        uint c = cs + SL_COEF;
        vec4 c0 = uintBitsToFloat(uvec4(cur[c], cur[c + 1u], cur[c + 2u], cur[c + 3u]));
        vec4 c1 = uintBitsToFloat(uvec4(cur[c + 4u], cur[c + 5u], cur[c + 6u], cur[c + 7u]));
        vec4 c2 = uintBitsToFloat(uvec4(cur[c + 8u], cur[c + 9u], cur[c + 10u], cur[c + 11u]));
        vec4 c3 = uintBitsToFloat(uvec4(cur[c + 12u], cur[c + 13u], cur[c + 14u], cur[c + 15u]));
        precise vec4 v = c0 + u * (c1 + u * (c2 + u * c3));
        uint bone = d0 & 0xffffu;
        if (bone >= nb || kind > 2u) {
            continue;
        }
        uint o = gPose + 3u * bone;
        if (kind != TRACK_ROT) {
            poses[o + (kind == 0u ? gSlot.x : gSlot.z)].xyz = v.xyz;
            continue;
        }
        precise float n = v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        vec4 q = vec4(0.0, 0.0, 0.0, 1.0);
        if (n > 0.0) {
            precise float inv = 1.0 / sqrt(n);
            q = v * inv;
        }
        poses[o + gSlot.y] = q;
    }
}
